/**
 * The length of the service's sliding request window, learned from the answers to creates (the
 * pacer's; see pacer.ts). The interface says 60 s, but a service or an emulator may use another.
 *
 * A 201's X-RateLimit-Reset is the service's "now" plus the window, rounded up to a whole second
 * (rule 2). The service's "now" is the moment it counted the create, between the moment we sent it and
 * the moment its answer arrived, read on our clock shifted by the service's clock offset. So one 201
 * bounds the window: reset − answered − 1 s < window ≤ reset − sent (all in ms, offset applied). Each
 * further 201 narrows these bounds; one that contradicts them means the window changed, and the bounds
 * start again from it.
 *
 * The pacer logs a create when its answer arrives, so what it paces by is how long after its answer the
 * service still counts a create: at most reset − answered for each 201 (the service counted it no later
 * than it answered), so the longest of these (the `reach`) holds for every create logged, and never more
 * than the upper bound. The upper bound alone added the whole round trip: latency before the service
 * counts a create (a slow network, a busy front end) made 8 s of it read a 5 s window as 13 s. The
 * reach rounds up to a second more than the window; once the bounds hold one whole second alone, the
 * window is that second (wholeSecondWithin): a 5 s window was paced as 5.5 s, its creates answered
 * within 0.3 s of each other.
 *
 * The clock offset: our clock is taken for the service's unless the Date headers (whole seconds) prove
 * they differ; then the offset is the smallest one they allow (which overestimates the window, never
 * underestimates it). An RPM 429 the pacer did not expect shows its entries count longer than it
 * thought: its X-RateLimit-Reset (when the oldest counted create ages out) lengthens the reach, and the
 * window when needed, to match.
 *
 * A window learned longer than MAX_RATE_WINDOW_MS (24 h) is paced by as 24 h (`clampedFromMs` tells
 * the longer one): no real service counts creates over days, and a reading that says so is a clock or
 * header fault that must not stall the batch for weeks.
 */

/** What the answer to one create said about the window (times on the pacer's clock, ms). */
export interface WindowReading {
  /** X-RateLimit-Reset, Unix seconds. */
  reset: number;
  /** The Date header, ms since the epoch; null without one. */
  date: number | null;
  /** When the create was sent. */
  sentAt: number;
  /** When its answer arrived. */
  answeredAt: number;
}

interface Bounds {
  /** Exclusive lower bound. */
  lo: number;
  /** Inclusive upper bound. */
  hi: number;
}

const SECOND = 1000;

/** The longest window paced by (24 h); a longer learned one is clamped to it. */
export const MAX_RATE_WINDOW_MS = 24 * 3600 * SECOND;

/**
 * The whole number of seconds, in ms, that `b` holds when it holds exactly one; else null. The service
 * counts its window in whole seconds (X-RateLimit-Reset and rate windows are whole seconds), so once the
 * answers narrow the bounds to less than a second around one, the window is that: paced by from each
 * create's answer, later than the service counted it, it never sends early.
 */
function wholeSecondWithin(b: Bounds): number | null {
  const top = Math.floor(b.hi / SECOND) * SECOND;
  return top > b.lo && top - SECOND <= b.lo ? top : null;
}

/** Intersects two bounds, or null when they exclude each other (lo is exclusive, hi inclusive). */
function intersect(a: Bounds, b: Bounds): Bounds | null {
  const lo = Math.max(a.lo, b.lo);
  const hi = Math.min(a.hi, b.hi);
  return lo < hi ? { lo, hi } : null;
}

/** The service's rate window: given (fixed), or learned from the answers (see the module comment). */
export class RateWindow {
  /** Bounds of the window, ms; null until a 201 with X-RateLimit-Reset. */
  private window: Bounds | null = null;
  /**
   * The longest time, ms, after its answer arrived, that the service still counted a create of ours
   * (X-RateLimit-Reset minus the arrival); null until a 201 with X-RateLimit-Reset.
   */
  private reach: number | null = null;
  /** Bounds of the service's clock minus ours, ms, from Date headers; null without any. */
  private offset: Bounds | null = null;
  /** The reach an RPM 429 showed the window needs (rejected), ms; 0 when none did. */
  private refusedReach = 0;

  /** @param fixedMs - a window given in advance (never re-learned), or null to learn it */
  constructor(private readonly fixedMs: number | null) {}

  /**
   * The window to pace by (how long a create counts after its answer), ms: the given one, else the
   * learned reach within the upper bound; null while unknown.
   */
  get ms(): number | null {
    if (this.fixedMs !== null) return this.fixedMs;
    const learned = this.learnedMs;
    return learned === null ? null : Math.min(MAX_RATE_WINDOW_MS, learned);
  }

  /**
   * The upper bound of the window's length paced by (a quota shared with other processes paces by it:
   * its log is not always stamped by the answers), ms: the given one, else the learned; null while unknown.
   */
  get upperMs(): number | null {
    if (this.fixedMs !== null) return this.fixedMs;
    return this.window === null ? null : Math.min(MAX_RATE_WINDOW_MS, this.window.hi);
  }

  /** The learned window, ms, when it is longer than the one paced by (MAX_RATE_WINDOW_MS); else null. */
  get clampedFromMs(): number | null {
    const learned = this.learnedMs ?? 0;
    return this.fixedMs === null && learned > MAX_RATE_WINDOW_MS ? learned : null;
  }

  /**
   * The window paced by, unclamped; null until learned: the one whole second the bounds hold, once
   * they hold one alone (and no RPM 429 asked for longer), else the reach within the upper bound.
   */
  private get learnedMs(): number | null {
    if (this.window === null) return null;
    const whole = wholeSecondWithin(this.window);
    if (whole !== null && whole >= this.refusedReach) return whole;
    return Math.max(0, Math.min(this.window.hi, this.reach ?? this.window.hi));
  }

  /** True when the window is learned (not given). */
  get learning(): boolean {
    return this.fixedMs === null;
  }

  /** The learned bounds (ms; lo exclusive), null when the window is given or not learned yet. */
  get bounds(): { loMs: number; hiMs: number } | null {
    if (this.fixedMs !== null || this.window === null) return null;
    return { loMs: this.window.lo, hiMs: this.window.hi };
  }

  /**
   * Narrows the learned bounds by others learned elsewhere (other processes on the key): each holds the
   * true length, so their intersection does. Bounds that exclude these are ignored (this window's own
   * answers will say whether it changed).
   */
  adopt(bounds: { loMs: number; hiMs: number }): void {
    if (this.fixedMs !== null || this.window === null) return;
    this.window = intersect(this.window, { lo: bounds.loMs, hi: bounds.hiMs }) ?? this.window;
  }

  /**
   * Learns from a 201.
   * @returns true when the window was learned for the first time or changed (not merely narrowed)
   */
  created(reading: WindowReading): boolean {
    if (this.fixedMs !== null) return false;
    this.readDate(reading);
    const offset = this.offsetMs();
    const resetMs = reading.reset * SECOND - offset;
    const seen: Bounds = { lo: resetMs - SECOND - reading.answeredAt, hi: resetMs - reading.sentAt };
    if (seen.hi <= 0) return false; // a Reset in the past: not a reading of this window
    const narrowed = this.window ? intersect(this.window, seen) : null;
    const reach = resetMs - reading.answeredAt;
    this.window = narrowed ?? seen;
    // A window that changed counts every create by its new length: the reach starts again too.
    this.reach = narrowed && this.reach !== null ? Math.max(this.reach, reach) : reach;
    if (!narrowed) this.refusedReach = 0;
    return narrowed === null;
  }

  /**
   * Learns from an RPM 429 whose oldest counted create (the one whose slot the pacer expected free)
   * was answered at `oldestAnsweredAt`: that create ages out at X-RateLimit-Reset, so the reach is at
   * least long enough to get there from its answer (and the upper bound, when that is shorter, is
   * lengthened by the 429's own round trip too, as that create's count time is not known more exactly).
   * Unless `explained` says that even that longer window would not hold enough of our creates to fill
   * the allowance: then the 429 (and its Reset) is another user's of the key, and says nothing about
   * the window.
   * @param explained - whether a window of the given ms would explain the 429 by our own creates
   * @returns true when the window was lengthened
   */
  rejected(
    reading: WindowReading,
    oldestAnsweredAt: number,
    explained: (windowMs: number) => boolean = () => true,
  ): boolean {
    if (this.fixedMs !== null || this.window === null) return false;
    this.readDate(reading);
    const resetMs = reading.reset * SECOND - this.offsetMs();
    const reach = resetMs - oldestAnsweredAt;
    const before = this.ms ?? 0;
    if (reach <= before || !explained(reach)) return false;
    this.reach = reach;
    this.refusedReach = reach;
    if (reach > this.window.hi) {
      this.window = { lo: this.window.hi, hi: reach + (reading.answeredAt - reading.sentAt) };
    }
    return true;
  }

  /** Narrows the clock offset by a Date header (a whole second, written between send and answer). */
  private readDate(reading: WindowReading): void {
    if (reading.date === null) return;
    const seen: Bounds = {
      lo: reading.date - reading.answeredAt - 1,
      hi: reading.date + SECOND - reading.sentAt,
    };
    this.offset = (this.offset ? intersect(this.offset, seen) : null) ?? seen;
  }

  /** 0 while the clocks may agree, else the smallest offset the Date headers allow. */
  private offsetMs(): number {
    if (this.offset === null || (this.offset.lo < 0 && this.offset.hi > 0)) return 0;
    return this.offset.lo;
  }
}
