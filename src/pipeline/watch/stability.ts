/**
 * The watcher's memory of the files it has seen, as a plain state machine driven by observations
 * (size and mtime at a time) and by completeness verdicts. No I/O and no timers: the caller passes the
 * time in, so every rule here is testable without waiting.
 *
 *   pending ──quiet period over, looked at again unchanged──▶ checking ──complete──▶ handed
 *      ▲                                                          │
 *      │                                                          └──not complete──▶ held ──give-up──▶ handed
 *      └────────── size or mtime changed (from any state) ──────────────────────────────────────┘
 *
 * A handed file that a complete rescan no longer finds becomes `missing` and is remembered for a while:
 * if it comes back unchanged it is `handed` again without being handed over a second time. A file that
 * was never handed over is simply forgotten when it disappears.
 */
import type { HeldBackFile } from '../report/held-back.ts';

export type TrackedState = 'pending' | 'checking' | 'held' | 'handed' | 'missing';

/** Size and mtime: what "unchanged" compares. */
export interface Signature {
  size: number;
  mtimeMs: number;
}

export interface TrackedFile extends Signature {
  /** Path relative to the watched folder, '/'-separated. */
  input: string;
  absPath: string;
  state: TrackedState;
  /** When the current size and mtime were first seen. */
  since: number;
  /** When the file was first seen at all. */
  firstSeenAt: number;
  /** Last time any look at the file (rescan, event, re-stat) found it. */
  lastSeenAt: number;
  /** The rescan that last found it. */
  seenInScan: number;
  /** Bumped on every change, so a completeness check started before a change is known to be stale. */
  version: number;
  /** Size and mtime when it was last handed over; null before the first time. */
  handed: Signature | null;
  /** How many times it was handed over (a second time only after a change). */
  handovers: number;
  /** Why it is held back (the completeness check's reason), while `held`. */
  heldReason: string | null;
  /** When the check held it back, while `held`. */
  heldSince: number | null;
  /** When a complete rescan first missed it, while `missing`. */
  missingSince: number | null;
}

/** A file an earlier watch of the out dir held back: since when (ms since the epoch), and why. */
export interface HeldEarlier {
  since: number;
  reason: string;
}

export interface StabilityOptions {
  /**
   * When an earlier watch of the out dir held back the file at `input` (its last report.json's
   * held_back), if it did: a file held back again, unchanged since then (its mtime not later), is held
   * back since that time, not since this session's check.
   */
  heldEarlier?: (input: string) => HeldEarlier | undefined;
  /** Size and mtime must stay unchanged this long before the file is checked. */
  quietMs: number;
  /** A held file is handed over as it is once unchanged this long (since its last change). */
  giveUpMs: number;
  /** A missing handed file is forgotten after this long. */
  forgetAfterMs: number;
}

export interface TrackerCounts {
  tracked: number;
  pending: number;
  checking: number;
  held: number;
  handed: number;
  missing: number;
}

/**
 * Unchanged: same size, and the same mtime to the millisecond. Sub-millisecond digits are ignored because
 * tools that restore an mtime (cp -p, rsync -t, a share remounted through another protocol) often keep
 * only milliseconds or microseconds; a file still being written changes its size anyway.
 */
export const sameSignature = (a: Signature, b: Signature): boolean =>
  a.size === b.size && Math.trunc(a.mtimeMs) === Math.trunc(b.mtimeMs);
const same = sameSignature;

/** The watcher's per-file memory (see the module comment). */
export class StabilityTracker {
  readonly #files = new Map<string, TrackedFile>();
  /** Files in pending, checking or held: the only ones a tick has to look at. */
  readonly #active = new Set<TrackedFile>();

  constructor(readonly options: StabilityOptions) {}

  /** The tracked file at `input`, if any. */
  get(input: string): TrackedFile | undefined {
    return this.#files.get(input);
  }

  /** How many files there are in each state. */
  counts(): TrackerCounts {
    const c: TrackerCounts = {
      tracked: this.#files.size,
      pending: 0,
      checking: 0,
      held: 0,
      handed: 0,
      missing: 0,
    };
    for (const f of this.#active) c[f.state] += 1;
    c.missing = this.#missingCount;
    c.handed = this.#files.size - c.pending - c.checking - c.held - c.missing;
    return c;
  }

  #missingCount = 0;

  #setState(f: TrackedFile, state: TrackedState): void {
    if (f.state === 'missing') this.#missingCount -= 1;
    if (state === 'missing') this.#missingCount += 1;
    f.state = state;
    if (state === 'pending' || state === 'checking' || state === 'held') this.#active.add(f);
    else this.#active.delete(f);
  }

  /**
   * Records that `input` was seen with `sig` at `now` (by rescan `scan` when given). A new file or a
   * changed one (size or mtime differ) starts its quiet period again; a missing one that comes back
   * unchanged is handed again (not handed over twice).
   *
   * @returns the tracked file and whether it changed (new files count as changed)
   */
  observe(input: string, absPath: string, sig: Signature, now: number, scan?: number): TrackedFile {
    let f = this.#files.get(input);
    if (f === undefined) {
      f = {
        input,
        absPath,
        size: sig.size,
        mtimeMs: sig.mtimeMs,
        state: 'pending',
        since: now,
        firstSeenAt: now,
        lastSeenAt: now,
        seenInScan: scan ?? 0,
        version: 0,
        handed: null,
        handovers: 0,
        heldReason: null,
        heldSince: null,
        missingSince: null,
      };
      this.#files.set(input, f);
      this.#active.add(f);
      return f;
    }
    f.absPath = absPath;
    f.lastSeenAt = now;
    if (scan !== undefined) f.seenInScan = scan;
    if (same(f, sig)) {
      if (f.state === 'missing') {
        f.missingSince = null;
        // Came back as it was: handed if it had been handed with this size and mtime.
        this.#setState(f, f.handed !== null && same(f.handed, sig) ? 'handed' : 'pending');
      }
      return f;
    }
    f.size = sig.size;
    f.mtimeMs = sig.mtimeMs;
    f.since = now;
    f.version += 1;
    f.heldReason = null;
    f.heldSince = null;
    f.missingSince = null;
    this.#setState(f, 'pending');
    return f;
  }

  /** Pending files whose size and mtime have been unchanged for the quiet period at `now`. */
  dueForCheck(now: number): TrackedFile[] {
    const due: TrackedFile[] = [];
    for (const f of this.#active) {
      if (f.state === 'pending' && now - f.since >= this.options.quietMs) due.push(f);
    }
    return due.sort((a, b) => a.since - b.since);
  }

  /** Held files unchanged for the give-up period at `now`: to be handed over as they are. */
  dueForGiveUp(now: number): TrackedFile[] {
    const due: TrackedFile[] = [];
    for (const f of this.#active) {
      if (f.state === 'held' && now - f.since >= this.options.giveUpMs) due.push(f);
    }
    return due;
  }

  /** The earliest time something becomes due (a check or a give-up), or null when nothing waits. */
  nextDueAt(): number | null {
    let next: number | null = null;
    for (const f of this.#active) {
      const at =
        f.state === 'pending'
          ? f.since + this.options.quietMs
          : f.state === 'held'
            ? f.since + this.options.giveUpMs
            : null;
      if (at !== null && (next === null || at < next)) next = at;
    }
    return next;
  }

  /** The files settling now (being written, or checked), each since it was last seen changing, oldest first. */
  settling(): { input: string; since: number }[] {
    const out: { input: string; since: number }[] = [];
    for (const f of this.#active) {
      if (f.state === 'pending' || f.state === 'checking') out.push({ input: f.input, since: f.since });
    }
    return out.sort((a, b) => a.since - b.since);
  }

  /** The files held back now, each with why and since when, by input path. */
  heldBack(): HeldBackFile[] {
    const held: HeldBackFile[] = [];
    for (const f of this.#active) {
      if (f.state === 'held') {
        held.push({ input: f.input, reason: f.heldReason ?? 'not complete', since: f.heldSince ?? f.since });
        continue;
      }
      // Not judged again yet in this session: held back as an earlier watch held it, while unchanged.
      const earlier =
        f.state === 'pending' || f.state === 'checking' ? this.options.heldEarlier?.(f.input) : undefined;
      if (earlier && this.unchangedSince(f, earlier)) held.push({ input: f.input, ...earlier });
    }
    return held.sort((a, b) => (a.input < b.input ? -1 : a.input > b.input ? 1 : 0));
  }

  /** True when `f` did not change after an earlier watch held it back (its mtime not later). */
  private unchangedSince(f: TrackedFile, earlier: HeldEarlier): boolean {
    return Math.trunc(f.mtimeMs) <= earlier.since;
  }

  /** Marks `f` as being checked; returns the version the verdict must match to count. */
  beginCheck(f: TrackedFile): number {
    this.#setState(f, 'checking');
    return f.version;
  }

  /**
   * Applies a completeness verdict to `f`, unless the file changed since the check began (then it is
   * pending again and the verdict is dropped).
   *
   * @param now - when the verdict came (a held file is held back since then, or since an earlier
   *   watch held it back unchanged: options.heldEarlier; default: its last change)
   * @returns `ready` (to hand over now), `held`, or `stale`
   */
  finishCheck(
    f: TrackedFile,
    version: number,
    reason: string | null,
    now: number = f.since,
  ): 'ready' | 'held' | 'stale' {
    if (f.version !== version || f.state !== 'checking' || this.#files.get(f.input) !== f) return 'stale';
    if (reason === null) return 'ready';
    f.heldReason = reason;
    const earlier = this.options.heldEarlier?.(f.input);
    f.heldSince = earlier && this.unchangedSince(f, earlier) ? Math.min(earlier.since, now) : now;
    this.#setState(f, 'held');
    return 'held';
  }

  /**
   * Starts `f`'s quiet period again without counting a change: a check that could not run (a tool
   * failed, the file could not be looked at). Ignored when `version` is given and `f` changed since.
   */
  restart(f: TrackedFile, now: number, version?: number): void {
    if (version !== undefined && f.version !== version) return;
    if (f.state !== 'pending' && f.state !== 'checking' && f.state !== 'held') return;
    f.since = now;
    this.#setState(f, 'pending');
  }

  /** Records that `f` was handed over with its current size and mtime. */
  markHanded(f: TrackedFile): void {
    f.handed = { size: f.size, mtimeMs: f.mtimeMs };
    f.handovers += 1;
    f.heldReason = null;
    this.#setState(f, 'handed');
  }

  /**
   * After a COMPLETE rescan numbered `scan` that started at `startedAt`: files it did not find (and no
   * other look found since it started) are forgotten when never handed over, or become missing when
   * handed; missing ones past the forget period are forgotten. Files for which `protect(input)` is true
   * (under a subfolder the scan could not read) and files being checked are left alone.
   *
   * @returns how many files were forgotten
   */
  sweep(
    scan: number,
    startedAt: number,
    now: number,
    protect: (input: string) => boolean = () => false,
  ): number {
    let forgotten = 0;
    for (const [input, f] of this.#files) {
      if (f.seenInScan === scan || f.state === 'checking' || protect(input)) continue;
      if (f.state === 'missing') {
        if (now - (f.missingSince ?? now) >= this.options.forgetAfterMs) {
          this.#drop(f);
          forgotten += 1;
        }
        continue;
      }
      if (f.lastSeenAt >= startedAt) continue; // an event or a re-stat saw it after the scan began
      if (f.handed !== null) {
        f.missingSince = now;
        this.#setState(f, 'missing');
      } else {
        this.#drop(f);
        forgotten += 1;
      }
    }
    return forgotten;
  }

  /** Forgets `input` at once (e.g. after --on-done moved it away). */
  forget(input: string): void {
    const f = this.#files.get(input);
    if (f) this.#drop(f);
  }

  #drop(f: TrackedFile): void {
    if (f.state === 'missing') this.#missingCount -= 1;
    this.#active.delete(f);
    this.#files.delete(f.input);
  }
}
