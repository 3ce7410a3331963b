/**
 * Group commit for the journal: the writes asked for in one turn of the event loop, or within
 * GROUP_WINDOW_MS of the last commit (a batch of 64 jobs makes many state changes at once), go into one
 * `BEGIN IMMEDIATE` transaction, so they cost one commit instead of one each. Each write's promise
 * resolves only once that transaction is committed and made durable (`durable`: the WAL synced off the
 * event loop, wal-sync.ts): "durable on resolve" (../store/README.md) holds.
 *
 * Each write runs in a savepoint of its own: one that throws is rolled back alone and rejects its own
 * promise; the others are committed. A commit that fails rejects them all. Writes are applied in the
 * order they were asked for; flush() applies the queued ones at once (the journal calls it before reads,
 * so nothing ever overtakes a queued write), and commitWith() applies them in the same transaction as
 * another one, ahead of it, so that one costs no commit of its own.
 */
import type Database from 'better-sqlite3';

/**
 * The least time between two commits, ms: a batch's state changes are spread over the event loop's
 * turns (each answer from the service is a turn of its own), so a write asked for within this time of
 * the last commit waits for the rest of it, and one commit (and one fsync) carries many of them. A
 * write asked for after a quiet spell is committed at the end of its turn: the one write a create
 * waits for (its request id) costs no wait of its own when the journal had nothing to do.
 */
export const GROUP_WINDOW_MS = 10;

interface QueuedWrite {
  write: () => void;
  done: () => void;
  fail: (err: unknown) => void;
}

/** The journal's queue of writes waiting for the turn's commit. */
export class WriteGroup {
  private queue: QueuedWrite[] = [];
  private scheduled = false;
  /** When the last commit was made (performance.now()), or -Infinity before the first. */
  private committedAt = Number.NEGATIVE_INFINITY;

  /**
   * @param rolledBack - called when a commit failed (whatever its writes did is undone)
   * @param durable - resolves once every commit made so far is on disk (WalSync.durable)
   */
  constructor(
    private readonly db: Database.Database,
    private readonly rolledBack: () => void = () => undefined,
    private readonly durable: () => Promise<void> = () => Promise.resolve(),
  ) {}

  /**
   * Queues `write` for the commit at the end of this turn.
   *
   * @returns resolves once the write is committed, rejects with what it threw (or what the commit threw)
   * @example await group.add(() => rows.write(id, item, prev, batchId));
   */
  add(write: () => void): Promise<void> {
    return new Promise<void>((done, fail) => {
      this.queue.push({ write, done, fail });
      if (this.scheduled) return;
      this.scheduled = true;
      const commit = () => {
        this.scheduled = false;
        this.flush();
      };
      const wait = this.committedAt + GROUP_WINDOW_MS - performance.now();
      if (wait > 0) setTimeout(commit, wait);
      else setImmediate(commit);
    });
  }

  /** Commits the queued writes now, in one transaction (nothing when none are queued). */
  flush(): void {
    if (this.queue.length === 0) return;
    try {
      this.commitWith(() => undefined);
    } catch {
      // each queued write's promise was rejected with it
    }
  }

  /**
   * Runs `body` in one `BEGIN IMMEDIATE` transaction after the queued writes, in a savepoint of its
   * own: one commit for both, instead of a commit of the queue and one of its own. A `body` that
   * throws is rolled back alone (the queued writes are still committed) and its error thrown; a commit
   * that fails rejects the queued writes and is thrown.
   *
   * @example const decision = group.commitWith(() => admitRow(sql, item, key));
   */
  commitWith<T>(body: () => T): T {
    const writes = this.queue;
    this.queue = [];
    this.committedAt = performance.now();
    const failed = new Map<QueuedWrite, unknown>();
    let outcome = { error: new Error('not run') } as { value: T } | { error: unknown };
    try {
      this.db
        .transaction(() => {
          for (const w of writes) {
            try {
              this.db.transaction(w.write)();
            } catch (err) {
              failed.set(w, err);
            }
          }
          try {
            outcome = { value: this.db.transaction(body)() };
          } catch (error) {
            outcome = { error };
          }
        })
        .immediate();
    } catch (err) {
      this.rolledBack();
      for (const w of writes) w.fail(err);
      throw err;
    }
    const committed = writes.filter((w) => !failed.has(w));
    for (const [w, err] of failed) w.fail(err);
    if (committed.length > 0)
      this.durable().then(
        () => {
          for (const w of committed) w.done();
        },
        (err: unknown) => {
          for (const w of committed) w.fail(err);
        },
      );
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }
}
