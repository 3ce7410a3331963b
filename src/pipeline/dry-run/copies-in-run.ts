/**
 * Copies within one dry run: files that no earlier run did but that share their content and recipe
 * (the identity of their work, from the journal's preview or, without a journal, the store's
 * newFileWork). A run sends the first and makes each other one wait for it, then links its outputs
 * (same-content.ts); so the first told here is sent and each later one is reused from it, priced 0.
 * A chain's steps likewise (step-work.ts): a step another file of the run sends for the same bytes
 * is taken from it, not priced. With --redo-same-content or --force no file may reuse another's work:
 * every copy is sent.
 */
import { type DryRunEntry, reusedInRun, withStepsDoneInRun } from './dry-run-entry.ts';
import { DRY_RUN_TEXTS } from './dry-run-texts.ts';

/** The identity of a file's work (the store's WorkIdentity). */
interface Work {
  id: string;
  mayReuse: boolean;
  steps?: Readonly<Record<string, string>>;
}

/** See the module comment; told the entries in the order their files came. */
export class CopiesInRun {
  /** The identity of the work of each file told as sent → that file's input (one entry per content sent). */
  private readonly sent = new Map<string, string>();
  /** The work of each chain step told as sent → the input of the file that sends it. */
  private readonly sentSteps = new Map<string, string>();

  /** @param within - where the copies are, in the command's words (DRY_RUN_TEXTS.within) */
  constructor(private readonly within: string) {}

  /** `entry` as it stands once the files told before it are known: a later copy of one sent is reused. */
  told(entry: DryRunEntry, work: Work | null): DryRunEntry {
    if (work === null || entry.outcome !== 'send') return entry;
    const first = this.sent.get(work.id);
    if (first === undefined) {
      this.sent.set(work.id, entry.input);
      return this.stepsTold(entry, work);
    }
    if (!work.mayReuse) return entry;
    return reusedInRun(entry, first, DRY_RUN_TEXTS.reusedInRun(first, this.within));
  }

  /** A chain's entry with the steps an earlier file of the run sends taken from it; its own sent ones noted. */
  private stepsTold(entry: DryRunEntry, work: Work): DryRunEntry {
    if (!entry.steps || !work.steps) return entry;
    const taken = new Map<string, string>();
    for (const step of entry.steps) {
      const id = work.steps[step.name];
      if (step.outcome !== 'send' || id === undefined) continue;
      const from = this.sentSteps.get(id);
      if (from !== undefined && work.mayReuse) taken.set(step.name, from);
      else this.sentSteps.set(id, entry.input);
    }
    if (taken.size === 0) return entry;
    const first = [...taken.values()][0] as string;
    return withStepsDoneInRun(
      entry,
      [...taken.keys()],
      DRY_RUN_TEXTS.stepsInRun([...taken.keys()], first, this.within),
    );
  }
}
