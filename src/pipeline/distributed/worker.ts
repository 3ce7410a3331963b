/**
 * The worker of distributed mode (`genpipe worker --store …`): takes item jobs from the store's queue
 * (item-queue.ts) and drives each through the same stages as `genpipe run`, in a session per out dir
 * and recipe (item-session.ts) whose runner options — the store wired in, the client — come from
 * `openSession` (the CLI's). What guards against paying twice is the store, not the queue:
 *
 * - every job starts with the store's admission of its item, which continues it from what was
 *   recorded (an upload reused, a created generation polled, an unknown create failed or resubmitted
 *   per the crash policy) and claims it;
 * - a create is sent only once its intent is recorded under this worker's claim (the fence,
 *   ../store/item-taken-over.ts): a worker paused past its lock whose job another worker took has its
 *   intent refused and sends nothing.
 *
 * A job this worker cannot do (its input unreadable here, the out dir not writable, the store not
 * reachable) throws with a clear message: the queue tries it again later, on any worker.
 */
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { newItem } from '../item.ts';
import { itemPlace } from '../report/index.ts';
import { StoreReachability } from '../store/postgres/index.ts';
import {
  type ItemJob,
  type ItemJobData,
  type ItemJobResult,
  type ItemWorker,
  openItemWorker,
  type QueueConnection,
} from './item-queue.ts';
import { type ItemSession, ItemSession as Session, type SessionRunOptions } from './item-session.ts';
import { WORKER_DEFAULTS } from './worker-defaults.ts';

/** What identifies a session: the jobs of one out dir, input dir, recipe and flags share one. */
export type SessionKey = Pick<ItemJobData, 'inputDir' | 'outDir' | 'recipe' | 'flags'>;

/** A session's runner options and how to release what they hold (the store). */
export interface OpenedSession {
  options: SessionRunOptions;
  close(): Promise<void>;
}

export interface WorkerOptions {
  connection: QueueConnection;
  /** Files held at once (queue jobs taken; default WORKER_DEFAULTS.filesAtOnce). */
  filesAtOnce?: number;
  openSession: (key: SessionKey) => Promise<OpenedSession>;
  /** Where the worker's lines go (a job refused here, the store gone and back). */
  log?: (line: string) => void;
  /** Where its line for each job taken and ended goes (default: `log`). */
  trace?: (line: string) => void;
}

interface LiveSession {
  session: ItemSession;
  opened: OpenedSession;
}

export class DistributedWorker {
  private readonly sessions = new Map<string, Promise<LiveSession>>();
  private readonly worker: ItemWorker;
  private readonly log: (line: string) => void;
  private readonly trace: (line: string) => void;
  /** Says once that the store went away and once that it is back; quiet in between. */
  private readonly reach: StoreReachability;
  private held = 0;
  /** Files held at once at most. */
  readonly filesAtOnce: number;

  constructor(private readonly opts: WorkerOptions) {
    this.filesAtOnce = opts.filesAtOnce ?? WORKER_DEFAULTS.filesAtOnce;
    this.log = opts.log ?? (() => undefined);
    this.trace = opts.trace ?? this.log;
    this.reach = new StoreReachability(opts.connection.url, this.log, 'worker');
    this.worker = openItemWorker(opts.connection, (job) => this.process(job), this.filesAtOnce);
    this.worker.on('error', (err) => void this.reach.failed(err));
  }

  /** Resolves once the worker takes jobs. */
  async ready(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  /**
   * Stops taking jobs; with `stop`, the items in hand stop as a run's do on SIGINT (the store keeps how
   * far each got, and their jobs go back to the queue once their locks lapse); else they finish first.
   */
  async close(stop = false): Promise<void> {
    this.reach.close();
    // Never a forced close: the queue hears how each job in hand ended. A stopped item's job goes back
    // to the queue at once, as a failed try (taken again after QUEUE_CHOICES.backoffMs, by any worker);
    // a job left to its lock would wait for the lock to lapse first.
    const closing = this.worker.close(false);
    const sessions = [...this.sessions.values()];
    if (stop) await Promise.all(sessions.map(async (s) => (await s).session.close(true)));
    await closing;
    this.sessions.clear();
    for (const s of sessions) {
      const live = await s.catch(() => null);
      if (!live) continue;
      await live.session.close();
      await live.opened.close().catch(() => undefined);
    }
  }

  /** Jobs this worker works on now. */
  get inHand(): number {
    return this.held;
  }

  private async process(job: ItemJob): Promise<ItemJobResult> {
    this.held++;
    try {
      return await this.work(job);
    } finally {
      this.held--;
    }
  }

  private async work(job: ItemJob): Promise<ItemJobResult> {
    const d = job.data;
    const absPath = join(d.inputDir, d.input);
    const found = await stat(absPath).catch(() => null);
    const readable =
      found !== null &&
      (await access(absPath, constants.R_OK).then(
        () => true,
        () => false,
      ));
    if (!found || !readable) {
      const why = `this worker cannot read input ${absPath} (inputs must be on storage every worker sees at the same path)`;
      this.log(`worker: ${why}`);
      throw new Error(why);
    }
    const writable = await mkdir(d.outDir, { recursive: true })
      .then(() => access(d.outDir, constants.W_OK))
      .then(
        () => true,
        () => false,
      );
    if (!writable) {
      const why = `this worker cannot write the out dir ${d.outDir} (it must be on storage every worker sees at the same path)`;
      this.log(`worker: ${why}`);
      throw new Error(why);
    }
    const live = await this.session(d);
    this.trace(`worker: ${d.input} taken (try ${job.attemptsStarted})`);
    const final = await live.session.drive(newItem(d.input, absPath, found.size, found.mtimeMs));
    if (final.state === 'stopped') {
      // Its session stopped (the store went away, the worker is stopping): the file is not the batch's
      // loss but the queue's to hand out again. Else the item's own reason (taken over meanwhile).
      const sessionStop = live.session.stopReason;
      this.log(
        sessionStop
          ? `worker: ${d.input} back to the queue, for any worker to take again: ${sessionStop}`
          : `worker: ${d.input} left: ${final.reason ?? 'stopped'}`,
      );
      throw new Error(final.reason ?? `${d.input} was stopped`);
    }
    this.trace(`worker: ${d.input} ${final.state}`);
    return { state: final.state, place: itemPlace(final), reason: final.reason ?? null, item: final };
  }

  /** The session of the job's out dir and recipe (a new one when the last one stopped). */
  private async session(d: ItemJobData): Promise<LiveSession> {
    const key: SessionKey = { inputDir: d.inputDir, outDir: d.outDir, recipe: d.recipe, flags: d.flags };
    const id = JSON.stringify([key.inputDir, key.outDir, key.recipe, key.flags]);
    const existing = this.sessions.get(id);
    if (existing) {
      const live = await existing.catch(() => null);
      if (live?.session.usable) return live;
      if (this.sessions.get(id) === existing) this.sessions.delete(id);
      if (live) void live.session.close().then(() => live.opened.close().catch(() => undefined));
      const again = this.sessions.get(id);
      if (again) return again;
    }
    const opening = (async (): Promise<LiveSession> => {
      const opened = await this.opts.openSession(key);
      return { session: new Session(opened.options), opened };
    })();
    this.sessions.set(id, opening);
    opening.catch(() => {
      if (this.sessions.get(id) === opening) this.sessions.delete(id);
    });
    return opening;
  }
}
