/**
 * The watcher's main loop, around the full rescan that is its source of truth (rescan.ts).
 *
 * - One turn every `rescanMs`: a rescan. While paused, a turn every `retryMs` looks at the folder
 *   instead, and resumes the watcher when it is sound again.
 * - A rescan waits for the file events to be live (a file that arrives while chokidar reads the tree
 *   may get no event), and runs only when the mount guard finds the folder sound. Every file it finds
 *   is a sighting.
 * - What a rescan did not find is forgotten (the tracker's sweep) only after it walked the whole tree
 *   with the folder sound before and after; otherwise the watcher pauses. What was known under an
 *   unreadable subfolder is kept, and each such subfolder is reported once (again only after it was
 *   readable in between).
 * - rescanNow() joins the rescan that runs, if any.
 */
import type { Item } from '../item.ts';
import { inputKey } from '../raw-names.ts';
import { errnoWords, WATCH_TEXTS } from './defaults.ts';
import type { HintIntake } from './hint-intake.ts';
import type { WatchLifecycle } from './lifecycle.ts';
import type { WatchListeners } from './listeners.ts';
import type { MountGuard } from './mount-guard.ts';
import type { WatchSettings } from './options.ts';
import type { PathHintRules } from './path-hint.ts';
import { failedReadyFile } from './ready-file.ts';
import { type RescanResult, rescanTree } from './rescan.ts';
import type { Settler } from './settler.ts';
import type { StabilityTracker } from './stability.ts';

/** The last rescan, for the stats. */
export interface ScanRecord {
  at: number;
  durationMs: number;
  files: number;
  complete: boolean;
}

/** What the loop works with. */
export interface ScanLoopParts {
  settings: Pick<WatchSettings, 'dir' | 'rescanMs' | 'retryMs' | 'select'>;
  /** Where and what to scan (the folder's real path, the files to leave out). */
  rules: PathHintRules;
  guard: MountGuard;
  life: WatchLifecycle;
  hints: Pick<HintIntake, 'live'>;
  tracker: StabilityTracker;
  sightings: Pick<Settler, 'observe'>;
  listeners: WatchListeners;
}

/** Inputs under one of `dirs` (subfolders a rescan could not read): kept by the sweep. */
function protectUnder(dirs: string[]): (input: string) => boolean {
  if (dirs.length === 0) return () => false;
  return (input) => dirs.some((d) => input.startsWith(`${d}/`));
}

/** The main loop (see the module comment). */
export class ScanLoop {
  #scans = 0;
  #lastScan: ScanRecord | null = null;
  #scanId = 0;
  #scanning: Promise<RescanResult | null> | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** Unreadable subfolders reported after the last complete rescan. */
  #reportedUnreadable = new Set<string>();
  /**
   * Inputs found failed (a name that is not valid UTF-8) and handed over, kept while rescans find them:
   * each is handed over once, and again only after a complete rescan did not find it.
   */
  #failedHanded = new Set<string>();
  /** Of those, the ones the running rescan found. */
  #failedFound = new Set<string>();

  constructor(private readonly parts: ScanLoopParts) {}

  /** Rescans run (complete or not). */
  get scans(): number {
    return this.#scans;
  }

  get lastScan(): ScanRecord | null {
    return this.#lastScan;
  }

  /** One turn of the loop: while paused, try the folder again; else rescan. Then the next turn. */
  async turn(): Promise<void> {
    const { life, guard, settings } = this.parts;
    this.#timer = null;
    if (life.closed) return;
    if (life.paused) {
      const v = await guard.check();
      if (life.closed) return;
      if (!v.ok) {
        life.pause(v.message);
        this.schedule(settings.retryMs);
        return;
      }
      life.resume();
    }
    await this.rescan();
    this.schedule(life.paused ? settings.retryMs : settings.rescanMs);
  }

  /** The next turn in `ms` (replacing the one set). */
  schedule(ms: number): void {
    if (this.parts.life.closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.turn(), ms);
  }

  /** No more turns (a rescan running is aborted by the watcher's close). */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }

  /** Runs a rescan, or joins the running one; null when it did not run (paused, closed). */
  rescan(): Promise<RescanResult | null> {
    this.#scanning ??= this.parts.life.track(this.#rescanOnce()).finally(() => {
      this.#scanning = null;
    });
    return this.#scanning;
  }

  async #rescanOnce(): Promise<RescanResult | null> {
    const { life, guard, rules, sightings } = this.parts;
    await this.parts.hints.live();
    if (life.closed) return null;
    const before = await guard.check();
    if (!before.ok) {
      life.pause(before.message);
      return null;
    }
    const id = ++this.#scanId;
    this.#failedFound = new Set();
    const startedAt = Date.now();
    const result = await rescanTree({
      dir: rules.root,
      skipFiles: rules.skipFiles,
      ...(rules.shouldSkip ? { shouldSkip: rules.shouldSkip } : {}),
      ...(this.parts.settings.select ? { select: this.parts.settings.select } : {}),
      signal: life.signal,
      onFile: (input, absPath, sig) => sightings.observe(input, absPath, sig, id),
      onFailed: (item) => this.#handFailed(item),
    });
    if (life.closed) return result;
    this.#scans += 1;
    const { durationMs, files, complete } = result;
    this.#lastScan = { at: startedAt, durationMs, files, complete };
    await this.#conclude(result, id, startedAt);
    this.parts.listeners.scanned(result);
    return result;
  }

  /** Keeps the rescan's findings (the sweep) when the folder stayed sound and it walked it all; else pauses. */
  async #conclude(result: RescanResult, id: number, startedAt: number): Promise<void> {
    const { life, guard, settings, tracker } = this.parts;
    const after = await guard.check();
    if (!after.ok) life.pause(after.message);
    else if (!result.complete) life.pause(WATCH_TEXTS.scanFailed(settings.dir, errnoWords(result.error)));
    else {
      this.#reportUnreadable(result.unreadable);
      this.#failedHanded = this.#failedFound;
      tracker.sweep(id, startedAt, Date.now(), protectUnder(result.unreadable.map((u) => u.input)));
    }
  }

  /** Hands over an input found failed (see #failedHanded), as it is: no quiet period, no check. */
  #handFailed(item: Item): void {
    const key = inputKey(item);
    this.#failedFound.add(key);
    if (this.#failedHanded.has(key) || this.parts.life.closed) return;
    this.#failedHanded.add(key);
    this.parts.listeners.ready(failedReadyFile(item, Date.now()));
  }

  /** Reports the unreadable subfolders not reported after the last complete rescan. */
  #reportUnreadable(found: RescanResult['unreadable']): void {
    const unreadable = found.filter((u) => u.code !== 'ENOENT');
    for (const u of unreadable) {
      if (!this.#reportedUnreadable.has(u.input)) {
        this.parts.listeners.problem(WATCH_TEXTS.subfolderUnreadable(u.input, errnoWords(u)));
      }
    }
    this.#reportedUnreadable = new Set(unreadable.map((u) => u.input));
  }
}
