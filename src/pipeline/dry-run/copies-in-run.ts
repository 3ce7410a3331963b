/**
 * Copies within one dry run: files that no earlier run did but that share their content and recipe
 * (the identity of their work, from the journal's preview or, without a journal, the store's
 * newFileWork). A run sends the first and makes each other one wait for it, then links its outputs
 * (same-content.ts); so the first told here is sent and each later one is reused from it, priced 0.
 * With --redo-same-content or --force no file may reuse another's work: every copy is sent.
 */
import { type DryRunEntry, reusedInRun } from './dry-run-entry.ts';
import { DRY_RUN_TEXTS } from './dry-run-texts.ts';

/** The identity of a file's work (the store's WorkIdentity). */
interface Work {
  id: string;
  mayReuse: boolean;
}

/** See the module comment; told the entries in the order their files came. */
export class CopiesInRun {
  /** The identity of the work of each file told as sent → that file's input (one entry per content sent). */
  private readonly sent = new Map<string, string>();

  /** `entry` as it stands once the files told before it are known: a later copy of one sent is reused. */
  told(entry: DryRunEntry, work: Work | null): DryRunEntry {
    if (work === null || entry.outcome !== 'send') return entry;
    const first = this.sent.get(work.id);
    if (first === undefined) {
      this.sent.set(work.id, entry.input);
      return entry;
    }
    if (!work.mayReuse) return entry;
    return reusedInRun(entry, first, DRY_RUN_TEXTS.reusedInRun(first));
  }
}
