/**
 * How long jobs of each kind take, learned from the jobs seen ending, so the poll loop can read a job
 * first when it should be done instead of on a fixed beat. A job's kind is what its length depends on
 * in its request: type, model, resolution and duration (jobKindOf).
 *
 * A read can only tell that a job was still running when the read was sent, or that it had ended by
 * then; so each ended job teaches a bracket: still running at `runningAtMs` (0: never seen running),
 * ended by `doneByMs`, both counted from the create's answer. RecentJobDurations keeps the last few
 * brackets of each kind and expects:
 * - while the brackets agree (the latest time a job was seen running is before the earliest time one
 *   was seen ended), halfway between the two: a bisection, each probe costing at most one early read;
 *   while no job was seen running, 10% before the earliest end (a probe that creeps down);
 * - once they are within a few percent of each other, either way (jobs of one length end a few ms
 *   apart), 50 ms after the later of the two: a read a moment too soon costs a whole interval;
 * - when they do not (the kind's jobs vary in length), the shortest tenth of the jobs' lengths (each
 *   taken as the middle of its bracket; a job that no read found running, as half the time of the read
 *   that found it ended, since it may have ended at any time before): read early and then often
 *   rather than late.
 */
import type { GenerationRequest } from './types.ts';

/** What one ended job taught: ms from its create's answer. */
export interface JobDurationSample {
  /** The time of the last read that found the job still running (0: none did). */
  runningAtMs: number;
  /** The time of the read that found it ended. */
  doneByMs: number;
}

/** A duration model: what the poll loop asks and tells (a pipeline may seed and persist it). */
export interface JobDurations {
  /** The time after its create by which a job of `kind` is expected to have ended, ms; null: unknown. */
  expectedMs(kind: string): number | null;
  /** Learns what one ended job of `kind` showed. */
  record(kind: string, sample: JobDurationSample): void;
}

/** Brackets kept per kind (the latest ones). */
export const JOB_DURATIONS_KEPT = 20;

/** Settings of RecentJobDurations. */
export interface RecentJobDurationsOptions {
  /** Brackets of earlier batches per kind, oldest first (the latest JOB_DURATIONS_KEPT are used). */
  seed?: Iterable<[string, readonly JobDurationSample[]]>;
  /** Hears every recorded bracket (to persist it). */
  onRecord?: (kind: string, sample: JobDurationSample) => void;
  /** Brackets kept per kind (default JOB_DURATIONS_KEPT). */
  keep?: number;
}

/**
 * The kind of job a request makes: `type|model|resolution|duration`, each empty when the request does
 * not say (the service's default applies).
 *
 * @example jobKindOf({ type: 'video', model: 'ray-3.2', video: { resolution: '720p', duration: '5s' } })
 * // 'video|ray-3.2|720p|5s'
 */
export function jobKindOf(request: Pick<GenerationRequest, 'type' | 'model' | 'video'>): string {
  const video = request.video ?? {};
  return [request.type ?? 'image', request.model ?? '', video.resolution ?? '', video.duration ?? ''].join(
    '|',
  );
}

/**
 * The share of a varied kind's jobs expected to have ended at its first read: low, since a job read
 * late waits idle in its slot while one read early costs one read.
 */
const SPREAD_QUANTILE = 0.1;

/** How long after a settled kind's end its jobs are read first, ms. */
const SETTLED_MARGIN_MS = 50;

/** The `q` quantile (0..1) of ascending `sorted` (not empty), interpolated. */
function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (at - lo);
}

/**
 * The expected time of a kind from its brackets (see the module comment).
 *
 * @example expectFrom([{ runningAtMs: 1000, doneByMs: 2000 }]) // 1500
 */
export function expectFrom(samples: readonly JobDurationSample[]): number | null {
  if (samples.length === 0) return null;
  const doneBy = Math.min(...samples.map((s) => s.doneByMs));
  // No job seen running: no lower bound; probe 10% earlier at a time rather than halfway to 0.
  const runningAt = Math.max(...samples.map((s) => s.runningAtMs)) || doneBy * 0.8;
  const resolution = Math.max(100, doneBy * 0.05);
  if (doneBy - runningAt > resolution) return Math.round((runningAt + doneBy) / 2);
  if (runningAt - doneBy <= resolution) {
    // Settled: the jobs of one kind end within a step of each other (one seen running a moment after
    // another was seen ended is the same length). A read a moment too soon costs a whole interval
    // (reads of a job are at least 1 s apart), so read a little after the later of the two; a job
    // still running then raises the later one, so the margin follows how far apart the ends are.
    return Math.round(Math.max(runningAt, doneBy) + SETTLED_MARGIN_MS);
  }
  // A job found ended at its first read ended somewhere between its create and that read. Taking the
  // read's time as its length would pin the expectation: jobs read late are found ended late, and
  // teach that jobs take that long. The middle of what it says lets the expectation come back down.
  const lengths = samples
    .map((s) => (s.runningAtMs > 0 ? (s.runningAtMs + s.doneByMs) / 2 : s.doneByMs / 2))
    .sort((a, b) => a - b);
  return Math.round(quantile(lengths, SPREAD_QUANTILE));
}

/** A duration model keeping the latest brackets of each kind in memory. */
export class RecentJobDurations implements JobDurations {
  private readonly byKind = new Map<string, JobDurationSample[]>();
  private readonly keep: number;
  private readonly onRecord: RecentJobDurationsOptions['onRecord'];

  constructor(options: RecentJobDurationsOptions = {}) {
    this.keep = Math.max(1, options.keep ?? JOB_DURATIONS_KEPT);
    this.onRecord = options.onRecord;
    for (const [kind, samples] of options.seed ?? []) this.byKind.set(kind, samples.slice(-this.keep));
  }

  expectedMs(kind: string): number | null {
    return expectFrom(this.byKind.get(kind) ?? []);
  }

  record(kind: string, sample: JobDurationSample): void {
    const samples = this.byKind.get(kind) ?? [];
    samples.push(sample);
    if (samples.length > this.keep) samples.splice(0, samples.length - this.keep);
    this.byKind.set(kind, samples);
    this.onRecord?.(kind, sample);
  }

  /** The brackets kept per kind, oldest first (for tests and inspection). */
  samples(kind: string): readonly JobDurationSample[] {
    return this.byKind.get(kind) ?? [];
  }
}
