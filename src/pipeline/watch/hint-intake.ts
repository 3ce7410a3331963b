/**
 * The file events' way in: chokidar's events are hints (file-hints.ts); the path of each is looked at
 * with discovery's own rules (path-hint.ts) and what is an input there is passed on as a sighting. The
 * watched folder going away, or the events failing, makes the mount guard look at the folder at once
 * (and pause the watcher if it is gone). The events stop while the watcher is paused and start again
 * when it resumes.
 */
import { errnoWords, WATCH_TEXTS } from './defaults.ts';
import { type FileHints, startFileHints } from './file-hints.ts';
import type { WatchLifecycle } from './lifecycle.ts';
import type { WatchListeners } from './listeners.ts';
import type { MountGuard } from './mount-guard.ts';
import type { HintSettings } from './options.ts';
import { lookAtPath, type PathHintRules } from './path-hint.ts';
import type { Settler } from './settler.ts';

/** chokidar's events as sightings (see the module comment). */
export class HintIntake {
  #hints: FileHints | null = null;

  /** `settings` null: the hints are off, and this does nothing. */
  constructor(
    private readonly settings: HintSettings | null,
    private readonly rules: PathHintRules,
    private readonly guard: MountGuard,
    private readonly life: WatchLifecycle,
    private readonly sightings: Pick<Settler, 'observe'>,
    private readonly listeners: WatchListeners,
  ) {}

  /** Starts the events (nothing when they run already, are off, or the watcher closed). */
  start(): void {
    const { settings, life } = this;
    if (settings === null || this.#hints !== null || life.closed) return;
    this.#hints = startFileHints({
      root: this.rules.root,
      poll: settings.poll,
      pollIntervalMs: settings.pollIntervalMs,
      delayMs: settings.delayMs,
      onPaths: (paths) => void life.track(this.#lookAtPaths(paths)),
      onRootGone: () => void life.track(this.#checkGuardNow()),
      onError: (err) => {
        this.listeners.problem(WATCH_TEXTS.hintError(errnoWords(err)));
        void life.track(this.#checkGuardNow());
      },
    });
  }

  /** Stops the events. */
  async stop(): Promise<void> {
    const h = this.#hints;
    this.#hints = null;
    await h?.close().catch(() => undefined);
  }

  /** Waits, at most `readyWaitMs`, for the events to be live (see file-hints.ts). */
  async live(): Promise<void> {
    const h = this.#hints;
    if (h === null || this.settings === null) return;
    const waitMs = this.settings.readyWaitMs;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      h.ready,
      new Promise<void>((r) => {
        timer = setTimeout(r, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  async #checkGuardNow(): Promise<void> {
    if (!this.life.live) return;
    const v = await this.guard.check();
    if (!v.ok) this.life.pause(v.message);
  }

  async #lookAtPaths(paths: string[]): Promise<void> {
    for (const p of paths) {
      if (!this.life.live) return;
      const seen = await lookAtPath(this.rules, p).catch(() => null);
      if (seen && this.life.live) this.sightings.observe(seen.input, seen.absPath, seen.sig);
    }
  }
}
