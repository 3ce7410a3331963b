/**
 * The bounded pools a batch's steps run in (see stage-list.ts PoolName): local disk and CPU work,
 * uploads, downloads and result writing each in a pool of its own size; jobs in flight (from submit
 * until the job ends, across two stages — which a per-stage pool cannot express) in `jobs`; and items
 * in flight in `inFlight`, so discovery never runs far ahead of the work.
 */
import pLimit from 'p-limit';
import type { PoolName } from '../stage-list.ts';
import type { ResolvedRun } from './options.ts';
import { Slots } from './slots.ts';

/** The pools a step may run in through a limiter (`jobs` and `poll` are the driver's). */
export type LimitedPool = Exclude<PoolName, 'jobs' | 'poll'>;

export class Pools {
  readonly limits: Record<LimitedPool, ReturnType<typeof pLimit>>;
  /** --concurrency: held from a submit until its job ends. */
  readonly jobs: Slots;
  /** Items being worked on at once. */
  readonly inFlight: Slots;

  constructor(run: ResolvedRun) {
    this.limits = {
      local: pLimit(run.localConcurrency),
      upload: pLimit(run.uploadConcurrency),
      download: pLimit(run.downloadConcurrency),
      report: pLimit(4),
    };
    this.jobs = new Slots(run.concurrency);
    this.inFlight = new Slots(
      2 * run.concurrency + run.localConcurrency + run.uploadConcurrency + run.downloadConcurrency,
    );
  }

  /** Runs `fn` in the local pool (disk and CPU). */
  local<T>(fn: () => Promise<T>): Promise<T> {
    return this.limits.local(fn);
  }
}
