/** The journal and store flags: where a batch keeps what it did, and what an earlier run's record means now. */
import { Option } from 'commander';
import { RUN_FLAGS } from '../../pipeline/run-flags.ts';
import { JOURNAL_FILE } from '../../pipeline/store/sqlite/journal-file.ts';
import { STORE_HELP } from '../store-url.ts';
import { FlagGroup } from './group.ts';

/** --journal, --store, --force, --retry-failed, --redo-same-content, --resubmit-unknown. */
export const JOURNAL = new FlagGroup('Journal and store flags:', [
  () =>
    new Option(
      `${RUN_FLAGS.journalFlag} <path>`,
      `the journal file, on a local disk (default <out-dir>/${JOURNAL_FILE.dirName}/${JOURNAL_FILE.fileName})`,
    ),
  () => new Option('--store <url>', STORE_HELP),
  () =>
    new Option(
      RUN_FLAGS.forceFlag,
      'redo every file, even those an earlier run finished (shared references are uploaded again too)',
    ),
  () =>
    new Option(
      RUN_FLAGS.retryFailedFlag,
      "retry every file that failed at the service in an earlier run, also those whose failure is the file's own (default: only failures that may pass now)",
    ),
  () =>
    new Option(
      RUN_FLAGS.redoSameContentFlag,
      'send a file even when another file of the folder with the same bytes and recipe is done or being processed (default: reuse its outputs and send nothing; use it for another take)',
    ),
  () =>
    new Option(
      RUN_FLAGS.resubmitUnknownFlag,
      'submit again the files whose create may have reached the service before an interruption (default: fail them, never pay twice)',
    ),
]);
