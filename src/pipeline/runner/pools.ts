/**
 * The bounded pools a batch's steps run in (see stage-list.ts PoolName): local disk and CPU work,
 * uploads, downloads and result writing each in a pool of its own size; jobs in flight (from submit
 * until the job ends, across two stages — which a per-stage pool cannot express) in `jobs`; and items
 * in flight in `inFlight`, so discovery never runs far ahead of the work.
 *
 * The local pool serves the step of the file furthest along first (its place in STAGES): a folder's
 * first files are checked and sent while the rest are still waiting to be sniffed (depth first), instead
 * of every file being sniffed before any is planned — which put the first create behind the whole
 * folder's sniffing, and a rate window's first creates behind all of its planning.
 */
import pLimit from 'p-limit';
import PQueue from 'p-queue';
import type { PoolName } from '../stage-list.ts';
import type { ResolvedRun } from './options.ts';
import { Slots } from './slots.ts';

/** The pools a step may run in through a limiter (`jobs` and `poll` are the driver's). */
export type LimitedPool = Exclude<PoolName, 'jobs' | 'poll'>;

/**
 * The local pool's order for the work a step's policy does around a step (admission, a copy's outputs
 * linked, a hash): after the plan that asked for it (1 in STAGES), before any check (2).
 */
export const POLICY_PRIORITY = 1.5;

export class Pools {
  private readonly local_: PQueue;
  private readonly limits: Record<Exclude<LimitedPool, 'local'>, ReturnType<typeof pLimit>>;
  /** --concurrency: held from a submit until its job ends. */
  readonly jobs: Slots;
  /** Items being worked on at once. */
  readonly inFlight: Slots;

  constructor(run: ResolvedRun) {
    this.local_ = new PQueue({ concurrency: run.localConcurrency });
    this.limits = {
      upload: pLimit(run.uploadConcurrency),
      download: pLimit(run.downloadConcurrency),
      report: pLimit(4),
    };
    this.jobs = new Slots(run.concurrency);
    this.inFlight = new Slots(
      2 * run.concurrency + run.localConcurrency + run.uploadConcurrency + run.downloadConcurrency,
    );
  }

  /**
   * Runs `fn` in `pool`; in the local pool, by `priority` (higher first, then in the order asked): the
   * index in STAGES of the step it runs, POLICY_PRIORITY for a step's policy.
   */
  run<T>(pool: LimitedPool, fn: () => Promise<T>, priority = POLICY_PRIORITY): Promise<T> {
    if (pool !== 'local') return this.limits[pool](fn);
    return this.local_.add(fn, { priority });
  }

  /** Runs `fn` in the local pool (disk and CPU), as a step's policy: run('local', fn). */
  local<T>(fn: () => Promise<T>): Promise<T> {
    return this.run('local', fn);
  }
}
