/**
 * The store's user-facing texts and the journal's refused filesystems, in one place. None of them is
 * part of the service's contract, so they live here rather than in src/spec. The journal file's names
 * and schema are in sqlite/journal-file.ts; the flags the texts name are in run-flags.ts.
 */
import type { Item, StepRecord } from '../item.ts';
import { RUN_FLAGS } from '../run-flags.ts';
import { JOURNAL_FILE } from './sqlite/journal-file.ts';

/**
 * Filesystem types on which the journal is refused: network and cluster filesystems, and the shared
 * folders of virtual machines. SQLite's WAL mode keeps its index in shared memory (`-shm`) and relies
 * on POSIX locks; neither works reliably across machines, so a crash or a second client can corrupt the
 * journal. `fuse.*` types are matched on their full name.
 */
export const NETWORK_FS_TYPES: readonly string[] = [
  'nfs',
  'nfs4',
  'cifs',
  'smb3',
  'smbfs',
  'smb2',
  'ncpfs',
  '9p',
  'drvfs',
  'afs',
  'openafs',
  'ceph',
  'glusterfs',
  'lustre',
  'gpfs',
  'beegfs',
  'orangefs',
  'pvfs2',
  'ocfs2',
  'gfs2',
  'davfs',
  'coda',
  'vboxsf',
  'vmhgfs',
  'fuse.sshfs',
  'fuse.glusterfs',
  'fuse.ceph-fuse',
  'fuse.cephfs',
  'fuse.davfs2',
  'fuse.rclone',
  'fuse.s3fs',
  'fuse.gcsfuse',
  'fuse.goofys',
  'fuse.blobfuse',
  'fuse.blobfuse2',
  'fuse.juicefs',
  'fuse.mfs',
  'fuse.lizardfs',
  'fuse.seaweedfs',
  'fuse.vmhgfs-fuse',
];

/** The journal's messages and item reasons. */
export const JOURNAL_TEXTS = {
  networkFs: (journalPath: string, fsType: string, mountPoint: string): string =>
    `the journal ${journalPath} would be on a network filesystem (${fsType} mounted at ${mountPoint}). ` +
    `The journal is a SQLite database in WAL mode, which needs shared memory and reliable file locks that ` +
    `network filesystems do not give: a crash or a second machine could corrupt it, and genpipe would then ` +
    `pay for work twice. Put the journal on a local disk with ${RUN_FLAGS.journalFlag} PATH ` +
    `(for example ${RUN_FLAGS.journalFlag} ~/.local/state/genpipe/my-batch.db); the out dir itself can stay where it is`,
  notWal: (journalPath: string, mode: string): string =>
    `the journal ${journalPath} could not be switched to WAL mode (SQLite answered '${mode}'); ` +
    `put it on a local disk with ${RUN_FLAGS.journalFlag} PATH`,
  newerSchema: (journalPath: string, version: number): string =>
    `the journal ${journalPath} was written by a newer genpipe (schema ${version}; this one knows ` +
    `${JOURNAL_FILE.schemaVersion}); upgrade genpipe or choose another ${RUN_FLAGS.journalFlag} PATH`,
  /** The journal exists but this user may not write it (or its folder): never a reason to remove it. */
  cannotWrite: (journalPath: string, why: string): string =>
    `the journal ${journalPath} cannot be written (${why}): a run records each step there before it takes ` +
    `it, so it needs write permission on the file and its folder. Run as the user who made it, or give ` +
    `this user write permission on both (keep the file: it is what stops a re-run paying for work twice)`,
  /** The journal exists but this user may not read it. */
  cannotRead: (journalPath: string, why: string): string =>
    `the journal ${journalPath} cannot be read (${why}); run as the user who made it, or give this user ` +
    `read permission on it`,
  /** A journal read without its -wal (status, a dry run): its last commits may be missing. */
  readWithoutWal: (journalPath: string): string =>
    `the journal's latest commits are in ${journalPath}-wal, which this user cannot read without writing ` +
    `beside it (no ${journalPath}-shm, and its folder cannot be written): what follows may be stale`,
  notAJournal: (journalPath: string, why: string): string =>
    `${journalPath} cannot be opened as a genpipe journal (${why}); remove it or choose another ${RUN_FLAGS.journalFlag} PATH`,
  /** `host` only when it is not this machine (another container on the same volume, say). */
  locked: (outDir: string, pid: number, since: string, host: string | null = null): string =>
    `another genpipe (pid ${pid}${host ? ` on host ${host}` : ''}, running since ${since}) is already ` +
    `working on the out dir ${outDir}; two runners on one out dir could submit the same files twice. ` +
    `Wait for it to finish, stop it (kill -INT ${pid}), or choose another --out`,
  /** The holder keeps its journal in another file than `journalPath`, so who it is is not known here. */
  lockedElsewhere: (outDir: string, journalPath: string): string =>
    `another genpipe is already working on the out dir ${outDir} (it holds its runner lock, and keeps ` +
    `its journal in another file than ${journalPath}); two runners on one out dir could submit the same ` +
    `files twice. Wait for it to finish, stop it, or choose another --out`,
  lockUnavailable: (lockPath: string, why: string): string =>
    `cannot take the runner lock ${lockPath} (${why}): genpipe holds this file locked while it works on ` +
    `the out dir, so that folder must be writable; choose another --out`,
  notALockFile: (lockPath: string, why: string): string =>
    `${lockPath} is not genpipe's runner lock (${why}); remove it (genpipe makes a new one) or choose another --out`,
  notPlanned: (input: string, state: string): string =>
    `journal: ${input} was saved in state '${state}' before the journal planned it (call journal.plan or admit first)`,

  /**
   * Reason of an item whose create may have reached the service, under the default policy: a run was
   * killed or stopped while sending it, or its answer was lost on the network (stages/submit.ts).
   */
  unknownOutcome: (requestId: string): string =>
    `submission outcome unknown (request id ${requestId}): the create may have reached the service — the ` +
    `run sending it was interrupted, or its answer was lost — so it was not sent again, which could pay ` +
    `twice. Rerun with ${RUN_FLAGS.resubmitUnknownFlag} to submit it again`,
  /** failure_reason kept in earlierAttempts when such an item is resubmitted. */
  resubmittedUnknown: `submission outcome unknown; resubmitted (${RUN_FLAGS.resubmitUnknownFlag})`,

  // Why a decision was taken (events and logs).
  forced: `redone (${RUN_FLAGS.forceFlag})`,
  contentChanged: 'the file changed since the last run: processed again',
  /** The same, of a file this run (or watch) already took, changed since. */
  contentChangedInRun: 'the file changed during this run: processed again',
  recipeChanged: 'the recipe for this file changed since the last run: processed again',
  uploadTooOld: 'the earlier upload is too old to reuse: uploading again',
  uploadGone: 'the earlier upload is no longer at the service: uploading again',
  /**
   * An item that failed in an earlier run and is tried again: its failure may pass now (`retryable`),
   * or --retry-failed asked for it (`flag`). `kind` is what failed (Item.failure), null when unknown.
   */
  retried: (kind: string | null, why: 'retryable' | 'flag'): string =>
    `retried: ${kind ?? 'a failure'} in the earlier run (${why === 'retryable' ? 'retryable' : RUN_FLAGS.retryFailedFlag})`,
  /** An item that failed in an earlier run for its own reasons, reported as it was. */
  failedNotRetried: (kind: string | null): string =>
    kind === null
      ? `failed in an earlier run, not retried: whether retrying could help was not recorded. Rerun with ` +
        `${RUN_FLAGS.retryFailedFlag} to retry it, or change the file or the recipe`
      : `failed in an earlier run (${kind}), not retried: the failure is the file's own, so sending it again ` +
        `would fail the same way. Change the file or the recipe, or rerun with ${RUN_FLAGS.retryFailedFlag} to retry it`,
  /**
   * A file an earlier run saw but did not finish, with nothing at the service for it yet: that run
   * stopped early (a signal, a batch-stopping error) or died first. Processed from the start.
   */
  continued: 'continued: the earlier run stopped before this file was finished',
  /**
   * An item resumed at submit: what its upload step did (upload-words.ts's uploadOutcome) — only a file
   * upload is "already uploaded"; a prompt file's text and a base64 image go in the request. With
   * nothing sent to the service for it (`sent` false) it is continued, not resumed.
   */
  resumeUploaded: (outcome: string, sent = true): string =>
    `${sent ? 'resumed' : 'continued'}: ${outcome === 'uploaded' ? 'already uploaded' : outcome}, submitting`,
  resumeSubmitted: (generationId: string): string =>
    `resumed: waiting for generation ${generationId}, submitted by an earlier run`,
  resumeRedownload: (generationId: string, problems: readonly string[]): string =>
    `resumed: downloading the outputs of generation ${generationId} again (${problems.join('; ')})`,
  resumeReport: 'resumed: outputs complete, writing the result',
  /**
   * Added to the resume reason of an earlier version of a file whose generation was in flight when a
   * newer version replaced it (left-in-flight.ts): collected into its own folder, nothing sent again.
   */
  earlierVersionCollected:
    'an earlier version of this file (a newer one is processed into its own folder): its generation, already paid for, is collected here',
  done: 'already done in an earlier run',
  /** A finished input of the out dir a watch session reports although it did not take it (finished-items.ts). */
  earlierSession: 'finished in an earlier session; not taken again in this one',
  resubmitUnknown: (requestId: string): string =>
    `submission outcome unknown (request id ${requestId}): submitting again (${RUN_FLAGS.resubmitUnknownFlag})`,
  /** The crash policy in force, in words (report.json / report.html). */
  policyFail:
    `a create that may have reached the service without its answer being recorded (the run was killed ` +
    `or stopped mid-create, or the answer was lost on the network) is not sent again, so nothing is paid ` +
    `twice: the item fails, naming its request id. ` +
    `Rerun with ${RUN_FLAGS.resubmitUnknownFlag} to submit such items again`,
  policyResubmit:
    `${RUN_FLAGS.resubmitUnknownFlag}: a create that may have reached the service without its answer ` +
    `being recorded is submitted again with a new request id; if the first one did reach the service, ` +
    `that item is paid twice`,
  /**
   * The same two reasons as worded by genpipe before they covered a lost answer: rows journaled then
   * still hold them (journal-row.ts recognises them, so such a create stays one of unknown outcome).
   */
  earlierUnknownReasons: (requestId: string): readonly string[] => [
    `the answer to the create request was lost after it was sent; the job may exist at the service. ` +
      `It was not resubmitted: look it up by X-Request-Id ${requestId} before running this file again`,
    `submission outcome unknown after an interruption (request id ${requestId}): the create may have ` +
      `reached the service, so it was not sent again, which could pay twice. Rerun with ` +
      `${RUN_FLAGS.resubmitUnknownFlag} to submit it again`,
  ],
  outputMissing: (path: string): string => `${path} is missing`,
  outputSize: (path: string, expected: number, actual: number): string =>
    `${path} has ${actual} bytes, ${expected} expected`,
  resultMissing: (path: string): string => `${path} is missing`,
} as const;

/** When a row was last written, for a reason: `2026-12-06 11:02 UTC`. */
function whenOf(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The generations an item's steps hold, in words: `generation g1`, `generations g1, g2`. */
function generationsOf(item: Item): string {
  const ids = item.steps.flatMap((s) => (s.generationId ? [s.generationId] : []));
  if (ids.length === 0) return 'no generation';
  return `${ids.length === 1 ? 'generation' : 'generations'} ${ids.join(', ')}`;
}

/**
 * How a shared failure's reason ends: never a way to send the copy on its own (for a create whose
 * outcome is unknown, that could pay twice; for the file's own failure, the same bytes fail alike).
 */
const FAILED_TAIL = `not sent on its own: a re-run retries them together (${RUN_FLAGS.retryFailedFlag} for a failure that would not pass by itself)`;

/**
 * The tail of a failure shared with a file whose create's outcome is unknown: only the flag that sends
 * that file again (once it is known not to have been created) sends the two, together.
 */
const FAILED_UNKNOWN_TAIL = `not sent on its own: ${RUN_FLAGS.resubmitUnknownFlag} sends them together, once`;

/** The tails of shared failures, and the one they were written with before (still in journals). */
const FAILED_TAILS = [
  FAILED_TAIL,
  FAILED_UNKNOWN_TAIL,
  `not sent again (${RUN_FLAGS.redoSameContentFlag} sends it anyway)`,
];

/** The reasons of a file that another input with the same content and recipe stands in for (same-content.ts). */
export const SAME_CONTENT_TEXTS = {
  /** Its outputs linked from the twin's, nothing sent. */
  reused: (twin: { input: string; item: Item; updatedAt: number }): string =>
    `reused: same content as ${twin.input} (done ${whenOf(twin.updatedAt)}, ${generationsOf(twin.item)})`,
  /** The same, the twin's input no longer on disk: the file was renamed or moved. */
  renamed: (twin: { input: string; item: Item; updatedAt: number }): string =>
    `renamed from ${twin.input}: its outputs reused (done ${whenOf(twin.updatedAt)}, ${generationsOf(twin.item)})`,
  /** Waiting for the twin, in flight, to end. */
  waiting: (input: string): string =>
    `waiting for ${input}, which has the same content and is being processed`,
  /** The twin's generation polled and downloaded here; never a new create (`renamed`: the twin's input is gone). */
  adopted: (input: string, generationId: string | null, renamed = false): string =>
    `${renamed ? `renamed from ${input}` : `same content as ${input}`}: collecting its generation${generationId ? ` ${generationId}` : ''}, nothing sent again`,
  /**
   * Failed as the twin did, nothing sent (a re-run retries them together when the failure may pass;
   * `unknown`: the twin's create's outcome is unknown, which only --resubmit-unknown sends again).
   */
  failed: (input: string, reason: string | null, unknown = false): string =>
    `same content as ${input}, which failed${reason ? `: ${reason.replace(/\.$/, '')}` : ''}; ${unknown ? FAILED_UNKNOWN_TAIL : FAILED_TAIL}`,
  /**
   * The failure a `failed` reason shares, as the file that first failed gave it (null when `reason` is
   * not one): a copy of a copy names the first file's failure, not a reason within a reason.
   */
  failedRoot: (reason: string | null): string | null => {
    const prefix = /^same content as .+?, which failed: /s.exec(reason ?? '');
    const tail = FAILED_TAILS.find((t) => reason?.endsWith(`; ${t}`));
    if (!prefix || !reason || tail === undefined) return null;
    return reason.slice(prefix[0].length, reason.length - tail.length - 2);
  },
  /**
   * A chain's steps done for the same content (by `input`; null: this file, under its recipe before)
   * taken, the `others` sent; a step whose files are gone, or whose generation the other file's process
   * left at the service, is downloaded from its generation.
   */
  stepsReused: (
    input: string | null,
    steps: readonly StepRecord[],
    others: number,
    renamed = false,
  ): string => {
    const plural = (n: number, word: string) => `${word}${n === 1 ? '' : 's'}`;
    const names = (of: readonly StepRecord[]) => of.map((s) => `'${s.name}'`).join(', ');
    const ids = steps.map((s) => s.generationId).join(', ');
    const whose =
      input === null ? 'done for this file before' : `done for ${input}, which has the same content`;
    // Taken at the service (the other file's process died), or their files deleted: downloaded here.
    const collected = steps.filter((s) => s.state !== 'downloaded');
    const from = collected.length === 1 ? 'its generation' : 'their generations';
    const collecting =
      collected.length === 0
        ? ''
        : `; ${plural(collected.length, 'step')} ${names(collected)} collected from ${from}`;
    const generations = `${plural(steps.length, 'generation')} ${ids}`;
    // The file renamed or moved (`input` no longer on disk): said first, as a whole file's rename is.
    const taken =
      renamed && input !== null
        ? `renamed from ${input}: ${plural(steps.length, 'step')} ${names(steps)} reused (${generations})`
        : `${plural(steps.length, 'step')} ${names(steps)} reused: ${whose} (${generations})`;
    return `${taken}${collecting}; ${others === 0 ? 'nothing is sent' : 'only the other steps are sent'}`;
  },
  /** The outputs could not be linked or copied into the file's folder (a local failure, tried again next run). */
  linkFailed: (input: string, why: string): string =>
    `the outputs of ${input} (same content) could not be linked or copied here: ${why}; nothing was sent, and the next run tries again`,
} as const;
