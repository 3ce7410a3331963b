/**
 * The client's retry notes in a batch's default (not verbose) output: the first retry of each kind (the
 * call, its path's shape with ids as `{id}`, and the answer it follows: `GET /v1/generations/{id} after
 * 503 "Service unavailable"`) is printed in full; the further ones of that kind are counted and told as
 * one line at most every RETRY_NOTES_EVERY_MS, and at the end. The pacer's holds after a 429 of the
 * rate window (`rate window full; holding creates for 1000 ms`) are one more such kind, and its waits
 * for room in the window (`waiting for the rate window (3.2 s): 5 creates held`) another. Every note
 * still goes to the log file in full; -v prints each. Other notes pass through.
 */
import { plural } from '../spec/plural.ts';

/** Shortest time between two count lines of one kind. */
export const RETRY_NOTES_EVERY_MS = 10_000;

/** A path as its route's shape: each segment past `/v1/<collection>` that is an id becomes `{id}`. */
export function routeShape(path: string): string {
  const [bare = ''] = path.split('?');
  return bare
    .split('/')
    .map((seg, i) => (i >= 3 && !/^[a-z]+$/.test(seg) ? '{id}' : seg))
    .join('/');
}

/** `GET /v1/generations/{id} after 429 "Too many concurrent jobs"`, or null for a note that is no retry. */
export function retryKind(text: string): string | null {
  const m = /^retrying (\S+) (\S+) .* after (.+?) \(attempt \d+ of \d+/.exec(text);
  return m ? `${m[1]} ${routeShape(m[2] as string)} after ${m[3]}` : null;
}

/** The pacer's note of a hold after a 429 of the rate window. */
const HOLD_NOTE = /^rate window full; holding creates for \d+ ms/;

/** A counted kind of note: its key, and how its count line names n of them. */
interface NoteKind {
  key: string;
  counted: (n: number) => string;
  further: string;
}

/** The pacer's note of a wait for room in the rate window. */
const WAIT_NOTE = /^waiting for the rate window \(/;

function noteKind(text: string): NoteKind | null {
  if (WAIT_NOTE.test(text)) {
    return {
      key: 'rate window wait',
      counted: (n) => `${plural(n, 'more wait', 'more waits')} for the rate window`,
      further: 'further waits are counted (-v shows each)',
    };
  }
  if (HOLD_NOTE.test(text)) {
    return {
      key: 'rate window hold',
      counted: (n) => `${plural(n, 'more hold', 'more holds')} of creates for the rate window`,
      further: 'further holds are counted (-v shows each)',
    };
  }
  const kind = retryKind(text);
  if (kind === null) return null;
  return {
    key: kind,
    counted: (n) => `${plural(n, 'more retry', 'more retries')} of ${kind}`,
    further: 'further retries like it are counted (-v shows each)',
  };
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
  /** Notes counted and not yet told, by kind (a kind is here once its first note was printed). */
  private readonly counted = new Map<string, { kind: NoteKind; n: number }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sinks: RetryNotesSinks,
    private readonly everyMs = RETRY_NOTES_EVERY_MS,
  ) {}

  /** One note of the client. */
  note(text: string): void {
    const kind = noteKind(text);
    if (kind === null) {
      this.sinks.note(text);
      return;
    }
    const held = this.counted.get(kind.key);
    if (held === undefined) {
      this.counted.set(kind.key, { kind, n: 0 });
      this.sinks.note(`${text}; ${kind.further}`);
      return;
    }
    this.sinks.record(text);
    held.n++;
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
    for (const held of this.counted.values()) {
      if (held.n === 0) continue;
      this.sinks.note(held.kind.counted(held.n));
      held.n = 0;
    }
  }

  /** The batch ended: the last count lines, and no timer left. */
  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.flush();
  }
}
