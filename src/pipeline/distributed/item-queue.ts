/**
 * The queues of distributed mode: one BullMQ queue per service and API key on a store (BullMQ 6 on its
 * PostgreSQL backend, in the store's database and a schema of its own), one job per item. A job's id
 * is the item's key — the out dir, the input, its content hash and the hash of the recipe's files — so
 * adding the same work again adds nothing, whoever adds it and whatever state the job is in.
 *
 * The timings that decide failover, in one place (QUEUE_CHOICES): a worker holds each job under a lock
 * it renews every lockDuration / 2 while its process runs; a worker that dies (kill -9, a lost machine)
 * stops renewing, and another worker's stall check (every stalledInterval) takes the job back once the
 * lock lapsed. A job taken over is continued from what the store recorded of it, never redone from
 * scratch (admission: a created generation is polled, an unknown create follows the crash policy).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createPostgresBackend, type Job, withBackend } from 'bullmq';
import type { Item } from '../item.ts';

/** The defaults of distributed mode, in one block. */
export const QUEUE_CHOICES = {
  /** The start of every queue's name (one queue per service and API key on a store: queueOf). */
  name: 'genpipe-items',
  /** The schema the queue's tables are in (the store's are in `genpipe`). */
  schema: 'genpipe_queue',
  /** How long a worker's hold on a job lasts without renewal (renewed every half of it). */
  lockDurationMs: 30_000,
  /** How often each worker looks for jobs whose lock lapsed. */
  stalledIntervalMs: 30_000,
  /** Times a job may be taken back from a dead worker before it is failed (a job that kills workers). */
  maxStalledCount: 5,
  /** Tries of a job that threw (the store unreachable, an input unreadable on that machine). */
  attempts: 8,
  /** First wait before a job that threw is tried again; doubled each time. */
  backoffMs: 5_000,
} as const;

/** What a job carries: where the item is and how it is to be processed (never a secret). */
export interface ItemJobData {
  /** The run that enqueued it (a batch id of the enqueuing run). */
  batch: string;
  /** The input dir, absolute, as every machine sees it. */
  inputDir: string;
  /** The out dir, absolute, as every machine sees it. */
  outDir: string;
  /** The item's input path (relative to inputDir). */
  input: string;
  /** The recipe file, absolute (null: genpipe.yaml in the input dir). */
  recipe: string | null;
  /** The crash policy and retry flags of the run that enqueued it. */
  flags: { force?: boolean; resubmitUnknown?: boolean; retryFailed?: boolean; redoSameContent?: boolean };
}

/** What a job returns: the item's final state and place, and the item itself. */
export interface ItemJobResult {
  state: string;
  place: string | null;
  reason: string | null;
  /**
   * The item as its drive ended: what the enqueuing run reports for a file the store has no row of (one
   * refused before it was planned: unreadable, empty, no rule). Absent from jobs of older versions.
   */
  item?: Item;
}

/**
 * The queue of one service and API key (queueOf): a worker takes only the jobs enqueued for the key it
 * was given, so a store shared by several keys or services never has one key's files paid for with
 * another's, nor a generation polled at a service that never made it.
 */
export function queueOf(service: string, keyFingerprint: string): string {
  const h = createHash('sha256').update(`${service}\0${keyFingerprint}`).digest('hex');
  return `${QUEUE_CHOICES.name}-${h.slice(0, 16)}`;
}

/** Where the queue is and how long its locks last (tests shorten them). */
export interface QueueConnection {
  /** The store's connection string (holds its password: never shown). */
  url: string;
  /** The queue's name: that of the service and API key the jobs are for (queueOf). */
  queue: string;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

const bull = withBackend(createPostgresBackend);
export type ItemQueue = InstanceType<typeof bull.Queue<ItemJobData, ItemJobResult>>;
export type ItemWorker = InstanceType<typeof bull.Worker<ItemJobData, ItemJobResult>>;
export type ItemJob = Job<ItemJobData, ItemJobResult>;

function connectionOf(c: QueueConnection) {
  return { connectionString: c.url, schema: QUEUE_CHOICES.schema, migrate: true };
}

/**
 * Gives every connection of a BullMQ queue's or worker's pool a listener for its 'error' for as long
 * as it lives. pg-pool listens only while a connection is idle; BullMQ checks one out for its schema
 * bootstrap (and the like) without listening, so PostgreSQL shutting down at that moment raised an
 * 'error' event nobody heard, which ends the process (a run crashed when the store stopped in its first
 * half second). The failure still reaches the query that was running. The pool is BullMQ's own
 * (`backend.connection.pool`): when a later BullMQ moves it, this does nothing.
 */
function guardPool<T extends object>(owner: T): T {
  const pool = (owner as { backend?: { connection?: { pool?: unknown } } }).backend?.connection?.pool as
    | { on?: (event: 'connect', fn: (client: { on(event: 'error', fn: () => void): void }) => void) => void }
    | undefined;
  pool?.on?.('connect', (client) => client.on('error', () => undefined));
  return owner;
}

/** The queue of the store at `c.url` (close it). */
export function openItemQueue(c: QueueConnection): ItemQueue {
  return guardPool(
    new bull.Queue<ItemJobData, ItemJobResult>(c.queue, {
      connection: connectionOf(c),
      defaultJobOptions: {
        attempts: QUEUE_CHOICES.attempts,
        backoff: { type: 'exponential', delay: QUEUE_CHOICES.backoffMs },
      },
    }),
  );
}

/** A worker of the store's queue running `process` on `concurrency` jobs at once (close it). */
export function openItemWorker(
  c: QueueConnection,
  process: (job: ItemJob) => Promise<ItemJobResult>,
  concurrency: number,
): ItemWorker {
  return guardPool(
    new bull.Worker<ItemJobData, ItemJobResult>(c.queue, process, {
      connection: connectionOf(c),
      concurrency,
      lockDuration: c.lockDurationMs ?? QUEUE_CHOICES.lockDurationMs,
      stalledInterval: c.stalledIntervalMs ?? QUEUE_CHOICES.stalledIntervalMs,
      maxStalledCount: QUEUE_CHOICES.maxStalledCount,
    }),
  );
}

/** The sha256 of a file's bytes, streamed. */
export function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (d) => h.update(d))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}

/**
 * The job id of an item: its key (out dir, input, content hash, the recipe files' hash), and with
 * --force the run's batch id too (a forced run redoes what is done).
 */
export function itemJobId(
  data: Pick<ItemJobData, 'outDir' | 'input' | 'batch' | 'flags'>,
  contentHash: string,
  recipeHash: string,
): string {
  const h = createHash('sha256');
  for (const part of [data.outDir, data.input, contentHash, recipeHash, data.flags.force ? data.batch : ''])
    h.update(`${part}\0`);
  return `item-${h.digest('hex').slice(0, 40)}`;
}
