/**
 * How many of an out dir's jobs the store's queue holds in each state, for `genpipe status --store`:
 * read straight from the queue's job table (BullMQ's PostgreSQL backend: one row per job, its state a
 * column, its data the ItemJobData) in one query that writes nothing. Null when the store has no queue
 * (nothing was ever enqueued on it) or it cannot be read.
 */
import pg from 'pg';
import { QUEUE_CHOICES } from './item-queue.ts';

/** An out dir's jobs by where they are in the queue. */
export interface QueueCounts {
  /** Waiting for a worker (or for the retry wait of a try that threw). */
  queued: number;
  /** In a worker's hands. */
  active: number;
  /** Ended with the item's final state (succeeded, failed, skipped: the item says which). */
  finished: number;
  /** Given up after every try threw (no worker could process it). */
  failed: number;
}

const COUNTS_SQL = `SELECT state::text AS state, count(*)::int AS n FROM ${QUEUE_CHOICES.schema}.job
  WHERE queue LIKE $1 || '-%' AND data->>'outDir' = $2 GROUP BY state`;

/** The jobs of `outDir` in the queue of the store at `url`, by state (null: no queue to read). */
export async function queueCounts(url: string, outDir: string): Promise<QueueCounts | null> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
      `${QUEUE_CHOICES.schema}.job`,
    ]);
    if (!exists.rows[0]?.t) return null;
    const { rows } = await client.query<{ state: string; n: number }>(COUNTS_SQL, [
      QUEUE_CHOICES.name,
      outDir,
    ]);
    const counts: QueueCounts = { queued: 0, active: 0, finished: 0, failed: 0 };
    for (const r of rows) {
      if (r.state === 'active') counts.active += r.n;
      else if (r.state === 'completed') counts.finished += r.n;
      else if (r.state === 'failed') counts.failed += r.n;
      else counts.queued += r.n;
    }
    return counts;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}
