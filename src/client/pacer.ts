/**
 * The request-rate pacer: one per client, shared by every create. It keeps its own sliding log of the
 * creates the service counted, learns the allowance from X-RateLimit-Limit (201 and RPM 429) and the
 * window's length from X-RateLimit-Reset (rate-window.ts; unless it is given), and holds a create back
 * while sending it would certainly get a 429 — instead of sending it and paying the 429.
 *
 * Timing: a create is logged when its answer arrives, which is no earlier than the moment the service
 * counted it, so the pacer's copy of an entry never ages out before the service's does. Creates whose
 * answer is pending hold a slot too. While the allowance or the window is unknown, one create at a time
 * probes them.
 * After an RPM 429 nothing is sent until its Retry-After (or, without one, its X-RateLimit-Reset) has
 * passed. X-RateLimit-Remaining on a 201 reveals creates of other processes sharing the key; they are
 * logged as if made at that moment, so the pacer leaves room for them too. The service counted that
 * 201's window when it received the create, so ours are counted as of the moment it was sent: an entry
 * of ours that aged out while the answer travelled was still in the service's count, and is not
 * somebody else's (entries are kept one window longer than they count, for this). With a quota shared
 * through a store (`othersCounted`) the other processes' creates are in its exact log instead.
 */
import { CHOICES, LIMITS, RATE_HEADERS } from '../spec/index.ts';
import { plural } from '../spec/plural.ts';
import { MAX_RATE_WINDOW_MS, RateWindow, type WindowReading } from './rate-window.ts';
import { abortReason } from './sleep.ts';
import { WakeTimer } from './wake-timer.ts';

/** Settings of a pacer. */
export interface PacerOptions {
  /**
   * Length of the service's sliding window in ms, when known in advance; learned from
   * X-RateLimit-Reset otherwise (the interface says 60 s; the emulator's is configurable).
   */
  windowMs?: number | null;
  /** Allowance per window when known in advance; learned from the headers otherwise. */
  limit?: number | null;
  /** Added to every computed wait, against timer and clock granularity. */
  marginMs?: number;
  /**
   * True when the creates of other processes on the key are counted elsewhere, exactly (a shared
   * quota's request log): X-RateLimit-Remaining is then not read as theirs. Logged as made when this
   * answer came back — later than they were — they would hold this process's creates past the moment
   * the shared log lets them go.
   */
  othersCounted?: boolean;
  now?: () => number;
  log?: ((message: string) => void) | undefined;
}

/** How a paced create ended, as far as the window is concerned. */
export type PaceOutcome =
  /** The service answered: its status and headers. */
  | { status: number; headers: Record<string, string>; retryAfterMs?: number | null }
  /** The request was sent but its answer lost: counted, to be safe. */
  | 'unknown'
  /** Nothing reached the service (or the create was never sent). */
  | 'not-sent';

/** A reserved slot: settle it exactly once with done(). */
export interface PaceTicket {
  done(outcome: PaceOutcome): void;
}

interface Waiter {
  resolve: (ticket: PaceTicket) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/** Shared pacer of a client's creates (see the module comment). */
export class Pacer {
  private readonly window: RateWindow;
  private limitValue: number | null;
  private readonly marginMs: number;
  private readonly othersCounted: boolean;
  private readonly now: () => number;
  private readonly log: ((message: string) => void) | undefined;
  /** Ascending times (ms) at which counted creates were answered. */
  private readonly entries: number[] = [];
  private inFlight = 0;
  /** False while the allowance is being probed (one create at a time). */
  private probed = false;
  private blockedUntil = 0;
  /** A wait for the window was told and no create has been let go since. */
  private waitTold = false;
  private readonly queue: Waiter[] = [];
  private readonly wakeTimer = new WakeTimer(
    () => this.now(),
    () => this.pump(),
  );

  constructor(options: PacerOptions) {
    this.window = new RateWindow(options.windowMs ?? null);
    this.limitValue = options.limit ?? null;
    this.marginMs = options.marginMs ?? 5;
    this.othersCounted = options.othersCounted ?? false;
    this.now = options.now ?? Date.now;
    this.log = options.log;
    if (this.limitValue !== null) this.probed = true;
  }

  /** The allowance per window, once known. */
  get limit(): number | null {
    return this.limitValue;
  }

  /**
   * The window paced by (how long a create counts after its answer arrived), ms: the given one, else
   * the learned one; null until the first answer.
   */
  get windowMs(): number | null {
    return this.window.ms;
  }

  /**
   * The upper bound of the window's length, ms (at least windowMs: it adds the round trip the service
   * may have counted a create before its answer): the given one, else the learned; null until learned.
   */
  get windowUpperMs(): number | null {
    return this.window.upperMs;
  }

  /** The learned bounds of the window's length (ms; lo exclusive); null when given or not learned yet. */
  get windowBounds(): { loMs: number; hiMs: number } | null {
    return this.window.bounds;
  }

  /**
   * Narrows the learned window by bounds other processes on the key learned (a shared quota's): their
   * intersection with this pacer's own, when they overlap (else this pacer's stand).
   */
  adoptWindow(bounds: { loMs: number; hiMs: number }): void {
    this.window.adopt(bounds);
  }

  /**
   * The window the log ages entries by: the known one, or (when a counted create came back without
   * X-RateLimit-Reset) the interface's.
   */
  private get agingMs(): number {
    return this.window.ms ?? LIMITS.rateWindowSeconds * 1000;
  }

  /** Creates held back right now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Creates counted in the window now, plus those whose answer is pending. */
  get used(): number {
    this.prune();
    return this.entries.length - this.firstLive(this.now()) + this.inFlight;
  }

  /**
   * Waits until a create may be sent without a certain 429 and reserves its slot (first come, first
   * served).
   * @param signal - aborting it leaves the queue and rejects with its reason
   */
  acquire(signal?: AbortSignal): Promise<PaceTicket> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
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

  /** Index of the first entry still inside the window at `at`. */
  private firstLive(at: number): number {
    let n = 0;
    while (n < this.entries.length && at - (this.entries[n] as number) >= this.agingMs) n++;
    return n;
  }

  /** Drops entries that aged out more than a window ago (settle() looks back to a create's send time). */
  private prune(): void {
    const n = this.firstLive(this.now() - this.agingMs);
    if (n > 0) this.entries.splice(0, n);
  }

  /** 0 when a create may go now, else ms to wait (Infinity: wait for a pending answer). */
  private waitMs(): number {
    const now = this.now();
    if (now < this.blockedUntil) return this.blockedUntil - now;
    if (!this.probed) return this.inFlight === 0 ? 0 : Number.POSITIVE_INFINITY;
    if (this.limitValue === null) return 0;
    this.prune();
    const first = this.firstLive(now);
    const used = this.entries.length - first + this.inFlight;
    if (used < this.limitValue) return 0;
    // The slot that frees first belongs to the entry that keeps the count at the limit.
    const index = first + used - this.limitValue;
    if (index >= this.entries.length) return Number.POSITIVE_INFINITY;
    return (this.entries[index] as number) + this.agingMs + this.marginMs - now;
  }

  private pump(): void {
    // Nobody waits (the last one left on its signal): no wake-up, so a stopped batch's process is
    // not kept alive until the window frees.
    if (this.queue.length === 0) this.wakeTimer.cancel();
    while (this.queue.length > 0) {
      const wait = this.waitMs();
      if (wait > 0) {
        if (Number.isFinite(wait)) {
          this.wakeTimer.arm(wait);
          this.tellWait(wait);
        }
        return;
      }
      this.waitTold = false;
      const waiter = this.queue.shift() as Waiter;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      this.inFlight++;
      waiter.resolve(this.ticket());
    }
  }

  /**
   * Tells, once per wait, that creates are held until the window has room (not after a 429: that hold
   * has its own note), so a batch that seems to stand still says why.
   */
  private tellWait(waitMs: number): void {
    if (this.waitTold || this.now() < this.blockedUntil) return;
    this.waitTold = true;
    const n = this.queue.length;
    this.log?.(`waiting for the rate window (${(waitMs / 1000).toFixed(1)} s): ${plural(n, 'create')} held`);
  }

  private ticket(): PaceTicket {
    let settled = false;
    const sentAt = this.now();
    return {
      done: (outcome) => {
        if (settled) return;
        settled = true;
        this.settle(outcome, sentAt);
        this.inFlight--;
        this.pump();
      },
    };
  }

  private settle(outcome: PaceOutcome, sentAt: number): void {
    if (outcome === 'not-sent') return;
    const now = this.now();
    if (outcome === 'unknown') {
      this.entries.push(now);
      return;
    }
    const limit = readInt(outcome.headers[RATE_HEADERS.limit.toLowerCase()]);
    if (limit !== null && limit > 0) this.limitValue = limit;
    const counted = CHOICES.rpmCountedStatuses.includes(outcome.status);
    if (outcome.status === 429 && limit !== null) this.settleRpm429(outcome, sentAt, now);
    if (outcome.status === 201) this.learnWindow(outcome.headers, sentAt, now, 'created');
    // The probe is over once the allowance and the window are known, or a counted create came back
    // without them (rate backend down, or a service that sends none): then the headers are all there is.
    if ((this.limitValue !== null && this.window.ms !== null) || counted) this.probed = true;
    if (!counted) return;
    this.prune();
    const remaining = readInt(outcome.headers[RATE_HEADERS.remaining.toLowerCase()]);
    if (this.limitValue !== null && remaining !== null && !this.othersCounted) {
      // Entries the service counts that are not ours (another process with the same key): the
      // service's count minus every create of ours that could be in it, this one included — those
      // live when this create was sent (the service counted no later than it received it).
      const ours = this.entries.length - this.firstLive(sentAt) + this.inFlight;
      const foreign = this.limitValue - remaining - ours;
      for (let i = 0; i < foreign; i++) this.entries.push(now);
    }
    this.entries.push(now);
  }

  /**
   * An RPM 429 (the only one with X-RateLimit-*): holds creates until its Retry-After, or else until
   * X-RateLimit-Reset (when the oldest request ages out); and, when the slot of one of our entries was
   * expected free, lengthens a learned window to reach that Reset.
   */
  private settleRpm429(
    outcome: Exclude<PaceOutcome, 'unknown' | 'not-sent'>,
    sentAt: number,
    now: number,
  ): void {
    const first = this.firstLive(sentAt);
    if (first > 0) {
      // A longer window explains this 429 only if it holds as many of the creates we know of as the
      // allowance (our creates still out, this one aside, counted too): else others used the key.
      const limit = this.limitValue ?? 0;
      const explained = (windowMs: number) =>
        this.entries.filter((t) => t > sentAt - windowMs).length + this.inFlight - 1 >= limit;
      this.learnWindow(outcome.headers, sentAt, now, this.entries[first - 1] as number, explained);
    }
    const reset = readInt(outcome.headers[RATE_HEADERS.reset.toLowerCase()]);
    const toldMs = outcome.retryAfterMs ?? (reset !== null ? reset * 1000 - now : null);
    // Never longer than the longest window paced by (a Reset days away is a fault, not a window).
    const holdMs = toldMs === null ? null : Math.min(toldMs, MAX_RATE_WINDOW_MS);
    if (holdMs !== null && holdMs > 0) {
      this.blockedUntil = Math.max(this.blockedUntil, now + holdMs);
      this.log?.(`rate window full; holding creates for ${holdMs} ms`);
    }
  }

  /**
   * Reads X-RateLimit-Reset (and Date) into the window: of a 201 ('created'), or of an RPM 429 whose
   * oldest counted create is the entry answered at the given time.
   */
  private learnWindow(
    headers: Record<string, string>,
    sentAt: number,
    now: number,
    of: 'created' | number,
    explained?: (windowMs: number) => boolean,
  ): void {
    const reset = readInt(headers[RATE_HEADERS.reset.toLowerCase()]);
    if (reset === null || !this.window.learning) return;
    const date = headers.date === undefined ? Number.NaN : Date.parse(headers.date);
    const reading: WindowReading = {
      reset,
      date: Number.isNaN(date) ? null : date,
      sentAt,
      answeredAt: now,
    };
    const before = this.window.ms;
    const changed =
      of === 'created' ? this.window.created(reading) : this.window.rejected(reading, of, explained);
    if (changed) this.log?.(windowNote(before, this.window.ms, this.window.clampedFromMs));
  }
}

function windowNote(before: number | null, after: number | null, clampedFromMs: number | null): string {
  const s = (ms: number | null) => `${((ms ?? 0) / 1000).toFixed(1)} s`;
  const clamped =
    clampedFromMs === null
      ? ''
      : ` (X-RateLimit-Reset implies ${s(clampedFromMs)}: paced by the longest window genpipe accepts, 24 h)`;
  return before === null
    ? `rate window: ${s(after)} (learned from X-RateLimit-Reset)${clamped}`
    : `rate window changed: ${s(before)} -> ${s(after)}${clamped}`;
}

function readInt(value: string | undefined): number | null {
  return value !== undefined && /^\d+$/.test(value.trim()) ? Number(value) : null;
}
