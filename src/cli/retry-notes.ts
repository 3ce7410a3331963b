/**
 * The client's retry notes in a batch's default (not verbose) output: the first retry of each kind (the
 * call and the answer it follows, `POST /v1/generations after 429 "Too many concurrent jobs"`) is
 * printed in full; the further ones of that kind are counted and told as one line at most every
 * RETRY_NOTES_EVERY_MS, and at the end. Every note still goes to the log file in full; -v prints each.
 * Other notes pass through.
 */

/** Shortest time between two count lines of one kind. */
export const RETRY_NOTES_EVERY_MS = 10_000;

/** `POST /v1/generations after 429 "Too many concurrent jobs"`, or null for a note that is no retry. */
export function retryKind(text: string): string | null {
  const m = /^retrying (\S+ \S+) .* after (.+?) \(attempt \d+ of \d+/.exec(text);
  return m ? `${m[1]} after ${m[2]}` : null;
}

/** Where the notes go. */
export interface RetryNotesSinks {
  /** Printed (stderr) and written to the log file. */
  note(text: string): void;
  /** Written to the log file only. */
  record(text: string): void;
}

/** The aggregator (see the module comment). */
export class RetryNotes {
  /** Retries counted and not yet told, by kind (a kind is here once its first note was printed). */
  private readonly counted = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sinks: RetryNotesSinks,
    private readonly everyMs = RETRY_NOTES_EVERY_MS,
  ) {}

  /** One note of the client. */
  note(text: string): void {
    const kind = retryKind(text);
    if (kind === null) {
      this.sinks.note(text);
      return;
    }
    const held = this.counted.get(kind);
    if (held === undefined) {
      this.counted.set(kind, 0);
      this.sinks.note(`${text}; further retries like it are counted (-v shows each)`);
      return;
    }
    this.sinks.record(text);
    this.counted.set(kind, held + 1);
    if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.flush();
      }, this.everyMs);
      this.timer.unref();
    }
  }

  /** Tells the retries counted since the last count line. */
  flush(): void {
    for (const [kind, n] of this.counted) {
      if (n === 0) continue;
      this.sinks.note(`${n} more ${n === 1 ? 'retry' : 'retries'} of ${kind}`);
      this.counted.set(kind, 0);
    }
  }

  /** The batch ended: the last count lines, and no timer left. */
  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.flush();
  }
}
