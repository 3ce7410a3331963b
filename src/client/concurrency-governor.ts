/**
 * The concurrency governor: one per client. It tracks this client's own jobs from their 201 until a
 * get()/wait() observes them completed or failed, learns the service's job ceiling from "Too many
 * concurrent jobs" 429s or takes it from the `maxConcurrentJobs` option, and holds creates back while the ceiling is reached (while it is unknown,
 * creates awaiting their answer are fewer than half our running jobs, at least one: slowStartRoom). A held create is
 * released the moment one of our jobs is observed terminal — not after the 429's fixed 60 s — and, as a
 * fallback when nothing is observed, once that Retry-After has passed.
 *
 * Several wait() loops may report the same job: only its first terminal observation frees a slot.
 *
 * The ceiling learned never exceeds the service's. The 429 says nothing of it (Retry-After only), and
 * our jobs not yet seen ending are more than the service counts whenever polling lags their ends (18
 * learned for 10). What is certain is the most of our jobs that ran at one moment: those created (201
 * received) before it and read still running by a read sent after it — the service never runs more
 * than its ceiling. On a 429 the client reads its jobs at once (see Generations), and the ceiling
 * learned is that count; a later read that shows more of them running at once raises it.
 *
 * That count may fall short of the ceiling: jobs that ended between the 429 and their read are not in
 * it. When the reads found some ended, the ceiling may be higher, and the governor probes: it lets one
 * create more than the ceiling go, until a read shows the extra job running with the others (the
 * ceiling rises, and the probe goes on) or a probe is refused (the ceiling stands; no more probing).
 * So a ceiling learned low costs at most one more 429, not a batch run below the service's ceiling.
 */
import { LIMITS, RATE_LIMIT_DETAILS, TERMINAL_GENERATION_STATES } from '../spec/index.ts';
import { abortReason } from './sleep.ts';
import { WakeTimer } from './wake-timer.ts';

/** Settings of a governor. */
export interface GovernorOptions {
  /** A fixed cap on concurrent jobs (never raised by what is learned). */
  maxConcurrentJobs?: number | null;
  /** Longest hold of a create before it is tried anyway (the concurrency 429's Retry-After). */
  fallbackMs?: number;
  /**
   * False when something else paces the creates while the ceiling is unknown (a quota shared with
   * other processes runs the slow start for the whole key): then, until a ceiling is known, only the
   * cap holds creates here. Default true.
   */
  slowStart?: boolean;
  now?: () => number;
  log?: ((message: string) => void) | undefined;
}

/** How a governed create ended. */
export type SlotOutcome =
  | { created: string }
  | {
      rejected: 'concurrency';
      retryAfterMs?: number | null;
      /** The key's ceiling, when a quota shared with other processes knows it (else our count is). */
      ceiling?: number;
      /** Reading our jobs after the 429 found some ended: the ceiling may be above those running. */
      jobsEnded?: boolean;
    }
  | 'none';

/** A reserved place for one create: settle it exactly once with done(). */
export interface GovernorSlot {
  done(outcome: SlotOutcome): void;
}

/** Options of one acquire. */
export interface AcquireOptions {
  signal?: AbortSignal | undefined;
  /**
   * Set after a concurrency 429 that taught no ceiling (none of our jobs was active, so the slots are
   * held by someone else): hold until one of our jobs ends or this many ms have passed.
   */
  holdMs?: number;
}

/** One of our jobs not yet seen ending. */
interface ActiveJob {
  /** When its 201 arrived (it ran from then, or earlier). */
  since: number;
  /** When the latest read that found it running was sent (it ran until then, or later); -Infinity. */
  runningAt: number;
}

interface Waiter {
  resolve: (slot: GovernorSlot) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
  /** Admit at this time whatever the count says. */
  deadline: number;
  /** Admit only on a release (or the deadline). */
  needsRelease: boolean;
}

/** Shared concurrency governor of a client's creates (see the module comment). */
export class ConcurrencyGovernor {
  private readonly cap: number | null;
  private learned: number | null = null;
  /** One create more than the learned ceiling may go (see the module comment). */
  private probing = false;
  /** Ceilings learned from 429s so far: a slot admitted before the latest went out with its round. */
  private lessons = 0;
  private readonly fallbackMs: number;
  private readonly slowStart: boolean;
  private readonly now: () => number;
  private readonly log: ((message: string) => void) | undefined;
  /** Our jobs the service may count as active (created, not seen ending). */
  private readonly active = new Map<string, ActiveJob>();
  /** Creates admitted whose answer is pending. */
  private reserved = 0;
  private readonly queue: Waiter[] = [];
  private readonly wakeTimer = new WakeTimer(
    () => this.now(),
    () => this.pump(),
  );

  constructor(options: GovernorOptions = {}) {
    this.cap = options.maxConcurrentJobs ?? null;
    this.fallbackMs = options.fallbackMs ?? LIMITS.concurrencyRetryAfterSeconds * 1000;
    this.slowStart = options.slowStart ?? true;
    this.now = options.now ?? Date.now;
    this.log = options.log;
  }

  /** The ceiling in force: the smaller of the option and what was learned; null when unknown. */
  get ceiling(): number | null {
    if (this.cap === null) return this.learned;
    if (this.learned === null) return this.cap;
    return Math.min(this.cap, this.learned);
  }

  /**
   * Takes the ceiling another process learned for the same key (a shared quota's): held creates are
   * admitted or held by it from now on.
   */
  adoptCeiling(ceiling: number): void {
    if (!(ceiling >= 1) || this.learned === ceiling) return;
    this.learned = ceiling;
    this.probing = false;
    this.pump();
  }

  /** How many of our jobs are active (created and not yet observed terminal). */
  get activeCount(): number {
    this.prune();
    return this.active.size;
  }

  /** Creates held back right now. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Waits for room under the ceiling and reserves it (first come, first served).
   * @param options.signal - aborting it leaves the queue and rejects with its reason
   * @param options.holdMs - see AcquireOptions
   */
  acquire(options: AcquireOptions = {}): Promise<GovernorSlot> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const hold = options.holdMs;
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        deadline: this.now() + (hold ?? this.fallbackMs),
        needsRelease: hold !== undefined,
        onAbort: () => {
          const i = this.queue.indexOf(waiter);
          if (i !== -1) this.queue.splice(i, 1);
          reject(abortReason(signal as AbortSignal));
          this.pump();
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
  }

  /** The ids of our jobs not yet seen ending (the ones to read when the service refuses a create). */
  activeIds(): string[] {
    this.prune();
    return [...this.active.keys()];
  }

  /**
   * Reports a generation this client read (get, wait): when it is one of our active jobs and its state
   * is terminal, its slot is freed and a held create is released. Repeated reports are harmless.
   * @param readSentAt - when the read was sent (on this governor's clock): a job found running ran
   *   until then, which tells how many of our jobs certainly ran at once
   */
  observe(generation: { id: string; state: string }, readSentAt?: number): void {
    if (!(TERMINAL_GENERATION_STATES as readonly string[]).includes(generation.state)) {
      const job = this.active.get(generation.id);
      if (job === undefined || readSentAt === undefined || readSentAt <= job.runningAt) return;
      job.runningAt = readSentAt;
      // More of our jobs ran at once than the learned ceiling: it was learned too low.
      const together = this.mostRunningAtOnce();
      if (this.learned !== null && together > this.learned) {
        this.learned = together;
        this.log?.(`${RATE_LIMIT_DETAILS.concurrency}: job ceiling learned as ${together}`);
        this.pump();
      }
      return;
    }
    this.forget(generation.id);
  }

  /**
   * The most of our jobs certainly running at one moment: at the 201 of one of them, those created
   * by then and read running after it.
   */
  private mostRunningAtOnce(): number {
    const jobs = [...this.active.values()].filter((j) => j.runningAt >= j.since);
    let most = 0;
    for (const { since: at } of jobs) {
      const n = jobs.filter((j) => j.since <= at && j.runningAt >= at).length;
      if (n > most) most = n;
    }
    return most;
  }

  /** Stops counting a job (terminal, or unknown to the service). */
  forget(id: string): void {
    if (this.active.delete(id)) this.pump(true);
  }

  private prune(): void {
    const maxAge = LIMITS.activeJobPruneSeconds * 1000;
    const now = this.now();
    for (const [id, job] of this.active) if (now - job.since >= maxAge) this.active.delete(id);
  }

  /**
   * Room for one more create. Under a known ceiling: our jobs and pending creates below it. While the
   * ceiling is unknown, the slow start (slowStartRoom).
   */
  private hasRoom(): boolean {
    const ceiling = this.ceiling;
    if (ceiling !== null) return this.activeCount + this.reserved < ceiling + (this.probes ? 1 : 0);
    return !this.slowStart || slowStartRoom(this.reserved, this.activeCount);
  }

  /** Admits waiters from the head while there is room; `released` marks a job that just ended. */
  private pump(released = false): void {
    let releases = released ? 1 : 0;
    if (this.queue.length === 0) this.wakeTimer.cancel(); // nobody waits: nothing to keep alive for
    while (this.queue.length > 0) {
      const head = this.queue[0] as Waiter;
      const now = this.now();
      let admit = now >= head.deadline;
      if (!admit && head.needsRelease && releases > 0) {
        admit = true;
        releases--;
      } else if (!admit && !head.needsRelease) admit = this.hasRoom();
      if (!admit) {
        this.wakeTimer.arm(head.deadline - now);
        return;
      }
      this.queue.shift();
      head.signal?.removeEventListener('abort', head.onAbort);
      this.reserved++;
      head.resolve(this.slot());
    }
  }

  /** Whether a probe may go above the learned ceiling (never above the `maxConcurrentJobs` cap). */
  private get probes(): boolean {
    return this.probing && this.learned !== null && (this.cap === null || this.learned < this.cap);
  }

  /**
   * Learns from "Too many concurrent jobs": `running`, the most of our jobs seen running at once;
   * `uncertain`, whether the reads after the 429 found some ended (the ceiling may be higher);
   * `probe`, whether the refused create went out above the learned ceiling; `lessonsBefore`, the
   * lessons learned when it went out.
   */
  private refused(running: number, uncertain: boolean, probe: boolean, lessonsBefore: number): void {
    if (running <= 0) return; // none of ours running: the slots are someone else's
    const before = this.learned;
    if (probe) {
      // A probe refused: the ceiling stands.
      this.learned = Math.max(before ?? 0, running);
      this.probing = false;
    } else if (before === null) {
      this.learned = running;
      this.probing = uncertain;
    } else if (lessonsBefore < this.lessons) {
      // Sent before the latest lesson, with the others of its round: one more reading of the same.
      this.learned = Math.max(before, running);
    } else {
      // Refused under the ceiling: other users of the key hold slots, or the ceiling fell.
      this.learned = running;
    }
    this.lessons++;
    if (this.learned !== before) {
      this.log?.(`${RATE_LIMIT_DETAILS.concurrency}: job ceiling learned as ${this.learned}`);
    }
  }

  private slot(): GovernorSlot {
    let settled = false;
    const lessonsBefore = this.lessons;
    // Admitted above the learned ceiling (reserved counts this one already).
    const ceiling = this.ceiling;
    const probe = ceiling !== null && this.activeCount + this.reserved > ceiling;
    return {
      done: (outcome) => {
        if (settled) return;
        settled = true;
        this.reserved--;
        if (outcome !== 'none' && 'created' in outcome) {
          this.active.set(outcome.created, { since: this.now(), runningAt: Number.NEGATIVE_INFINITY });
        } else if (outcome !== 'none' && outcome.rejected === 'concurrency') {
          // Not our jobs not seen ending: some may have ended unread (see the module comment).
          if (outcome.ceiling !== undefined) {
            if (outcome.ceiling > 0 && this.learned !== outcome.ceiling) {
              this.learned = outcome.ceiling;
              this.probing = false;
              this.log?.(`${RATE_LIMIT_DETAILS.concurrency}: job ceiling learned as ${outcome.ceiling}`);
            }
          } else this.refused(this.mostRunningAtOnce(), outcome.jobsEnded ?? false, probe, lessonsBefore);
        }
        this.pump();
      },
    };
  }

  /** Stops the fallback timer (the client is closing). */
  close(): void {
    this.wakeTimer.cancel();
  }
}

/**
 * The slow start while the job ceiling is unknown (a client's governor, and the store's quota ledger
 * shared by workers): room for one more create while the creates awaiting their answer (`pending`) are
 * fewer than half the jobs running (`running`), and always for one. The creates in flight grow by half
 * with each round of answers, and the first "Too many concurrent jobs" arrives with few others in flight:
 * at most one refusal against a ceiling of up to 4, about half the ceiling above (one per job running
 * made as many refusals as the ceiling, 3 against a ceiling of 3; every held create at once, 20 of 30).
 */
export function slowStartRoom(pending: number, running: number): boolean {
  return pending < Math.max(1, Math.floor(running / 2));
}
