/**
 * Settling: the StabilityTracker (a pure state machine) driven with time and I/O.
 *
 * - Every sighting of a file (rescan or file event) comes in through observe(). A file never handed
 *   over that `known` names is handed over at once; any other waits for its quiet period.
 * - A file is looked at as soon as its quiet period ends (a wake-up is set for that moment; a tick every
 *   `tickMs` is the backstop). Due files are checked oldest first, `checkConcurrency` at once, each
 *   finished check starting the next: looked at again (unchanged?), checked for completeness, looked at
 *   again, then handed over or held.
 * - A held file past the give-up period is handed over as it is, if it is still unchanged.
 * - Nothing is checked or handed over while the watcher is paused or closed; a check that ends then
 *   starts the file's quiet period again.
 */
import { stat } from 'node:fs/promises';
import { type CompleteVerdict, checkComplete } from './complete-check.ts';
import type { HandOver } from './hand-over.ts';
import type { WatchLifecycle } from './lifecycle.ts';
import type { WatchListeners } from './listeners.ts';
import type { WatchSettings } from './options.ts';
import type { Signature, StabilityTracker, TrackedFile } from './stability.ts';
import { WakeTimer } from './wake-timer.ts';

async function signatureOf(path: string): Promise<Signature | null> {
  const st = await stat(path).catch(() => null);
  return st?.isFile() ? { size: st.size, mtimeMs: st.mtimeMs } : null;
}

type SettlerSettings = Pick<WatchSettings, 'quietMs' | 'checkConcurrency' | 'tickMs' | 'known'>;

/** Takes sightings in and hands files over once they settled (see the module comment). */
export class Settler {
  #checks = 0;
  /** The last verdict of each file: a file given up on is handed over with it. */
  readonly #verdicts = new WeakMap<TrackedFile, CompleteVerdict>();
  /** Files due for a check at the last tick, oldest first: each finished check starts the next one. */
  #due: TrackedFile[] = [];
  #running = 0;
  readonly #ticker: NodeJS.Timeout;
  readonly #wake = new WakeTimer(() => this.#tick());

  constructor(
    private readonly settings: SettlerSettings,
    private readonly tracker: StabilityTracker,
    private readonly life: WatchLifecycle,
    private readonly handOver: HandOver,
    private readonly listeners: WatchListeners,
  ) {
    this.#ticker = setInterval(() => this.#tick(), settings.tickMs);
  }

  /** Completeness checks run so far. */
  get checks(): number {
    return this.#checks;
  }

  /** Records a sighting of a file (by rescan `scan` when given). */
  observe(input: string, absPath: string, sig: Signature, scan?: number): void {
    const f = this.tracker.observe(input, absPath, sig, Date.now(), scan);
    if (f.state !== 'pending') return;
    if (f.handovers === 0 && !this.life.paused && this.settings.known?.(f)) {
      this.handOver.give(f, undefined, 'known');
    } else this.#wake.wakeAt(f.since + this.settings.quietMs);
  }

  /** No more ticks or wake-ups (the checks in flight end on their own). */
  stop(): void {
    clearInterval(this.#ticker);
    this.#wake.stop();
  }

  #tick(): void {
    if (!this.life.live) return;
    const now = Date.now();
    for (const f of this.tracker.dueForGiveUp(now)) this.life.track(this.#giveUp(f));
    this.#due = this.tracker.dueForCheck(now);
    this.#startChecks();
    const next = this.tracker.nextDueAt();
    if (next !== null && next > now) this.#wake.wakeAt(next);
  }

  #startChecks(): void {
    const now = Date.now();
    while (this.#running < this.settings.checkConcurrency && this.#due.length > 0 && this.life.live) {
      const f = this.#due.shift() as TrackedFile;
      if (f.state !== 'pending' || this.tracker.get(f.input) !== f || now - f.since < this.settings.quietMs) {
        continue;
      }
      this.#running += 1;
      this.life.track(this.#checkOne(f)).finally(() => {
        this.#running -= 1;
        this.#startChecks();
      });
    }
  }

  /** Looks at `f` again; false (and its quiet period restarted) when it changed or is gone. */
  async #unchanged(f: TrackedFile, version: number): Promise<boolean> {
    const sig = await signatureOf(f.absPath);
    if (sig === null) {
      this.tracker.restart(f, Date.now(), version);
      return false;
    }
    this.tracker.observe(f.input, f.absPath, sig, Date.now());
    return f.version === version;
  }

  async #checkOne(f: TrackedFile): Promise<void> {
    const version = this.tracker.beginCheck(f);
    this.#checks += 1;
    try {
      if (!(await this.#unchanged(f, version))) return;
      const verdict = await checkComplete(f.absPath);
      if (!(await this.#unchanged(f, version))) return;
      if (!this.life.live) {
        this.tracker.restart(f, Date.now(), version);
        return;
      }
      this.#verdicts.set(f, verdict);
      const reason = verdict.complete ? null : verdict.reason;
      if (this.tracker.finishCheck(f, version, reason, Date.now()) === 'ready') {
        this.handOver.give(f, verdict, 'checked');
      }
    } catch (err) {
      // The tools failed (ffprobe could not start), not the file: say so and try again later.
      this.listeners.problem(
        `checking ${f.input} failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      this.tracker.restart(f, Date.now(), version);
    }
  }

  async #giveUp(f: TrackedFile): Promise<void> {
    const version = f.version;
    const sig = await signatureOf(f.absPath);
    if (sig === null || !this.life.live || f.state !== 'held') return;
    this.tracker.observe(f.input, f.absPath, sig, Date.now());
    if (f.version !== version || f.state !== 'held') return;
    this.handOver.give(f, this.#verdicts.get(f), 'gaveUp');
  }
}
