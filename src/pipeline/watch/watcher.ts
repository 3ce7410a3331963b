/**
 * `genpipe watch`'s file watching: hands over each input file of a folder once it is really complete,
 * and again only after it changed.
 *
 * - Source of truth: a full rescan of the tree every `rescanMs` (discovery itself, so `run` and `watch`
 *   agree on what an input is). chokidar events are hints that make one path be looked at soon.
 * - A file is handed over only when its size and mtime have been unchanged for `quietMs` (looked at
 *   again after the quiet period, not just "no event came") AND it is complete (see complete-check.ts:
 *   full image decode, video container length + ffprobe, nothing more for other kinds). Files found at
 *   start-up go through the same wait. A stable file that is not complete is held back until it changes,
 *   or until `giveUpMs` passes: then it is handed over as it is (`complete: false` with the reason), so
 *   the pipeline fails it with that reason locally, before any upload.
 * - A file the caller already finished with the same size and mtime (`known`: the journal, on a restart)
 *   is handed over as soon as it is seen, without the quiet period or the check: a restart over
 *   thousands of finished files does not decode them all again before it looks at a new one.
 * - If the folder disappears or becomes unreadable, the watcher PAUSES (onPause with a plain message),
 *   tries again every `retryMs` and resumes (onResume) when it is back. Nothing is forgotten while paused,
 *   and a rescan only ever forgets after it walked the whole tree with the folder sound before and after.
 * - A file is looked at as soon as its quiet period ends, and due files are checked one after another
 *   (`checkConcurrency` at once), not a few per tick.
 * - A rescan waits (at most `hintsReadyWaitMs`) for chokidar to have read the tree: a file that arrives
 *   while chokidar starts may get no event, and the rescan finds it instead of the next periodic one.
 *
 * @example
 * const w = await startWatcher({ dir: 'inbox', outDir: 'out', onReady: (f) => queue.push(f), onPause: console.warn });
 * // … later
 * await w.close();
 */
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { OVERLAP_WORDS, overlapRefusal } from '../batch-paths.ts';
import { futureRealpath } from '../discover.ts';
import { type Item, newItem } from '../item.ts';
import { type CompleteVerdict, checkComplete } from './complete-check.ts';
import { errnoWords, WATCH_DEFAULTS, WATCH_TEXTS } from './defaults.ts';
import { type FileHints, startFileHints } from './file-hints.ts';
import { createMountGuard } from './mount-guard.ts';
import { lookAtPath, type PathHintRules } from './path-hint.ts';
import { type RescanResult, rescanTree } from './rescan.ts';
import { type Signature, StabilityTracker, type TrackedFile, type TrackerCounts } from './stability.ts';

/** A file handed over by the watcher. */
export interface ReadyFile {
  /** Path relative to the watched folder, '/'-separated (the item's identity). */
  input: string;
  absPath: string;
  /** Size and mtime at hand-over; the file was unchanged through the quiet period and the check. */
  size: number;
  mtimeMs: number;
  /** What the completeness check sniffed; null when it could not tell. */
  kind: 'image' | 'video' | 'other' | null;
  mime: string | null;
  /**
   * True when the completeness check passed. False when handed over after the give-up period without
   * passing: `reason` then says why, and the pipeline's check fails the file with its own reason.
   */
  complete: boolean;
  reason: string | null;
  /** 1 the first time; 2, 3, … when handed over again after it changed. */
  handover: number;
  /**
   * True when handed over at once because `known` said it was finished with this size and mtime (no
   * quiet period, no completeness check: `complete` is then true and `kind` null).
   */
  known: boolean;
  /** When the watcher first saw the file, and when it handed it over (ms since the epoch). */
  firstSeenAt: number;
  readyAt: number;
}

export interface WatcherOptions {
  /** The folder to watch (the inbox). Must exist at start. */
  dir: string;
  /** The batch's out dir: refused when it overlaps the watched folder (see batch-paths.ts). */
  outDir?: string;
  /** Quiet period: size and mtime unchanged this long (default {@link WATCH_DEFAULTS}.quietMs). */
  quietMs?: number;
  /** Full rescan interval (default {@link WATCH_DEFAULTS}.rescanMs). */
  rescanMs?: number;
  /** Give-up period for stable files that do not parse (default {@link WATCH_DEFAULTS}.giveUpMs). */
  giveUpMs?: number;
  /** Retry interval while paused (default {@link WATCH_DEFAULTS}.retryMs). */
  retryMs?: number;
  /** How long a handed file missing from complete rescans is remembered. */
  forgetAfterMs?: number;
  /** chokidar polling mode (network shares); the rescans run either way. */
  poll?: boolean;
  pollIntervalMs?: number;
  /** Use chokidar hints at all (default true; the bench turns them off to time rescans alone). */
  hints?: boolean;
  /** Completeness checks at once (default {@link WATCH_DEFAULTS}.checkConcurrency). */
  checkConcurrency?: number;
  /** Files to leave out wherever they sit (the recipe file and its references). */
  skipFiles?: Iterable<string>;
  /**
   * True when the file, with this size and mtime, was already finished (the journal's record): it is
   * handed over when first seen, without waiting for the quiet period or checking it. Asked only for
   * files not yet handed over in this session.
   */
  known?: (file: { input: string; absPath: string } & Signature) => boolean;
  /** Further inputs to leave out, by path relative to the watched folder. */
  shouldSkip?: (input: string) => boolean;
  /** A file is ready. Called once per file (again only after it changed). A rejection is reported via onProblem. */
  onReady(file: ReadyFile): void | Promise<void>;
  /** The watcher paused, with a plain message saying why (called again if the reason changes). */
  onPause?(message: string): void;
  /** The folder is back; the watcher goes on. */
  onResume?(): void;
  /** Something worth telling that does not pause the watcher (an unreadable subfolder, events failing). */
  onProblem?(message: string): void;
  /** After each rescan (complete or not). */
  onScan?(result: RescanResult): void;
  /** Closes the watcher when aborted. */
  signal?: AbortSignal;
}

export interface WatcherStats extends TrackerCounts {
  /** Rescans run (complete or not). */
  scans: number;
  lastScan: { at: number; durationMs: number; files: number; complete: boolean } | null;
  paused: boolean;
  pauseReason: string | null;
  pauses: number;
  /** Hand-overs so far (a file handed over again after a change counts again). */
  handedOver: number;
  /** Of those, handed over after the give-up period without passing the completeness check. */
  gaveUp: number;
  /** Completeness checks run. */
  checks: number;
  /** Hand-overs of files `known` said were finished (not checked). */
  known: number;
}

export interface Watcher {
  /** The watched folder's real path. */
  readonly dir: string;
  /** Resolves once the first rescan has run (files found then are pending, not yet handed over). */
  readonly firstScan: Promise<void>;
  stats(): WatcherStats;
  /** Forgets `input` (after --on-done moved it away), so a new file of that name is handed over. */
  forget(input: string): void;
  /** Runs a rescan now (or joins the running one); null while paused or closed. */
  rescanNow(): Promise<RescanResult | null>;
  /** Stops watching: no onReady after it resolves. Safe to call twice. */
  close(): Promise<void>;
}

async function signatureOf(path: string): Promise<Signature | null> {
  const st = await stat(path).catch(() => null);
  return st?.isFile() ? { size: st.size, mtimeMs: st.mtimeMs } : null;
}

/**
 * A pipeline Item (state `discovered`) for a handed-over file, for the runner. For a file handed over
 * after the give-up period (`complete: false`), {@link incompleteReason} is the reason to fail it with
 * once a recipe rule claims it (at the check stage, before any upload): the local check alone would let
 * a half-copied faststart MP4 through, since ffprobe reads only its headers.
 */
export function readyItem(file: ReadyFile): Item {
  return newItem(file.input, file.absPath, file.size, file.mtimeMs);
}

/** The failure reason for a file handed over incomplete; null when it is complete. */
export function incompleteReason(file: ReadyFile): string | null {
  return file.complete ? null : WATCH_TEXTS.neverComplete(file.reason ?? 'unknown');
}

/**
 * What startWatcher refuses, checked without starting anything: `dir` must be a folder, and the out dir
 * neither the folder nor inside it. `watch` asks before it opens the journal, which writes in the out dir.
 *
 * @returns the folder's real path
 * @throws Error naming the folder (and the out dir) and the rule
 * @example await checkWatchFolders('inbox', 'out/inbox');
 */
export async function checkWatchFolders(dir: string, outDir?: string): Promise<string> {
  const abs = resolve(dir);
  const st = await stat(abs).catch(() => null);
  if (st === null || !st.isDirectory()) throw new Error(WATCH_TEXTS.notAFolderAtStart(abs));
  const root = await realpath(abs);
  if (outDir !== undefined) {
    const refusal = await overlapRefusal({ inputDir: abs, outDir, words: OVERLAP_WORDS.watch });
    if (refusal !== null) throw new Error(refusal);
  }
  return root;
}

/**
 * Starts watching `opts.dir` (see the module comment).
 *
 * @throws Error when the folder does not exist, or the out dir overlaps it (the folder, inside it, or
 *   holding it)
 */
export async function startWatcher(opts: WatcherOptions): Promise<Watcher> {
  const quietMs = opts.quietMs ?? WATCH_DEFAULTS.quietMs;
  const rescanMs = opts.rescanMs ?? WATCH_DEFAULTS.rescanMs;
  const retryMs = opts.retryMs ?? WATCH_DEFAULTS.retryMs;
  const concurrency = Math.max(1, opts.checkConcurrency ?? WATCH_DEFAULTS.checkConcurrency);
  // The tick is a backstop: a wake-up is also set for when the next quiet period ends.
  const tickMs = Math.min(1_000, Math.max(25, Math.round(quietMs / 4)));

  const dir = resolve(opts.dir);
  const guard = await createMountGuard(dir);
  const root = await checkWatchFolders(dir, opts.outDir);
  const skipFiles = new Set<string>();
  for (const f of opts.skipFiles ?? []) skipFiles.add(await futureRealpath(f));
  const rules: PathHintRules = { root, skipFiles, shouldSkip: opts.shouldSkip };

  const tracker = new StabilityTracker({
    quietMs,
    giveUpMs: opts.giveUpMs ?? WATCH_DEFAULTS.giveUpMs,
    forgetAfterMs: opts.forgetAfterMs ?? WATCH_DEFAULTS.forgetAfterMs,
  });
  const verdicts = new WeakMap<TrackedFile, CompleteVerdict>();
  const counters = { scans: 0, pauses: 0, handedOver: 0, gaveUp: 0, checks: 0, known: 0 };
  let lastScan: WatcherStats['lastScan'] = null;
  let paused = false;
  let pauseReason: string | null = null;
  let closed = false;
  let scanId = 0;
  let scanning: Promise<RescanResult | null> | null = null;
  let cycleTimer: NodeJS.Timeout | null = null;
  let hints: FileHints | null = null;
  let running = 0;
  const inFlight = new Set<Promise<unknown>>();
  const closing = new AbortController();
  const reportedUnreadable = new Set<string>();

  const problem = (message: string) => {
    try {
      opts.onProblem?.(message);
    } catch {
      // a listener's own failure is not the watcher's
    }
  };
  const track = <T>(p: Promise<T>): Promise<T> => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p)).catch(() => undefined);
    return p;
  };

  // ---- hand-over ----------------------------------------------------------------------------------

  /** Hands `f` over: after its check passed, after the give-up period, or at once as known. */
  function handOver(
    f: TrackedFile,
    verdict: CompleteVerdict | undefined,
    how: 'checked' | 'gaveUp' | 'known',
  ): void {
    if (closed) return;
    tracker.markHanded(f);
    counters.handedOver += 1;
    if (how === 'gaveUp') counters.gaveUp += 1;
    if (how === 'known') counters.known += 1;
    const file: ReadyFile = {
      input: f.input,
      absPath: f.absPath,
      size: f.size,
      mtimeMs: f.mtimeMs,
      kind: verdict?.kind ?? null,
      mime: verdict?.mime ?? null,
      complete: how === 'known' || (how === 'checked' && verdict?.complete === true),
      reason: verdict && !verdict.complete ? verdict.reason : null,
      handover: f.handovers,
      known: how === 'known',
      firstSeenAt: f.firstSeenAt,
      readyAt: Date.now(),
    };
    try {
      const r = opts.onReady(file);
      if (r && typeof (r as Promise<void>).then === 'function') {
        (r as Promise<void>).catch((err) => problem(WATCH_TEXTS.onReadyFailed(f.input, String(err))));
      }
    } catch (err) {
      problem(WATCH_TEXTS.onReadyFailed(f.input, err instanceof Error ? err.message : String(err)));
    }
  }

  /** Records a sighting of a file; one never handed over that `known` names is handed over at once. */
  function observe(input: string, absPath: string, sig: Signature, scan?: number): void {
    const f = tracker.observe(input, absPath, sig, Date.now(), scan);
    if (f.state !== 'pending') return;
    if (f.handovers === 0 && !paused && opts.known?.(f)) handOver(f, undefined, 'known');
    else wakeAt(f.since + quietMs);
  }

  /** Looks at `f` again; false (and its quiet period restarted) when it changed or is gone. */
  async function unchanged(f: TrackedFile, version: number): Promise<boolean> {
    const sig = await signatureOf(f.absPath);
    if (sig === null) {
      tracker.restart(f, Date.now(), version);
      return false;
    }
    tracker.observe(f.input, f.absPath, sig, Date.now());
    return f.version === version;
  }

  async function checkOne(f: TrackedFile): Promise<void> {
    const version = tracker.beginCheck(f);
    counters.checks += 1;
    try {
      if (!(await unchanged(f, version))) return;
      const verdict = await checkComplete(f.absPath);
      if (!(await unchanged(f, version))) return;
      if (paused || closed) {
        tracker.restart(f, Date.now(), version);
        return;
      }
      verdicts.set(f, verdict);
      if (tracker.finishCheck(f, version, verdict.complete ? null : verdict.reason) === 'ready') {
        handOver(f, verdict, 'checked');
      }
    } catch (err) {
      // The tools failed (ffprobe could not start), not the file: say so and try again later.
      problem(`checking ${f.input} failed: ${err instanceof Error ? err.message : String(err)}`);
      tracker.restart(f, Date.now(), version);
    }
  }

  async function giveUp(f: TrackedFile): Promise<void> {
    const version = f.version;
    const sig = await signatureOf(f.absPath);
    if (sig === null || closed || paused || f.state !== 'held') return;
    tracker.observe(f.input, f.absPath, sig, Date.now());
    if (f.version !== version || f.state !== 'held') return;
    handOver(f, verdicts.get(f), 'gaveUp');
  }

  /** Files due for a check at the last tick, oldest first: each finished check starts the next one. */
  let due: TrackedFile[] = [];
  function startChecks(): void {
    const now = Date.now();
    while (running < concurrency && due.length > 0 && !paused && !closed) {
      const f = due.shift() as TrackedFile;
      if (f.state !== 'pending' || tracker.get(f.input) !== f || now - f.since < quietMs) continue;
      running += 1;
      track(checkOne(f)).finally(() => {
        running -= 1;
        startChecks();
      });
    }
  }

  function tick(): void {
    if (paused || closed) return;
    const now = Date.now();
    for (const f of tracker.dueForGiveUp(now)) track(giveUp(f));
    due = tracker.dueForCheck(now);
    startChecks();
    const next = tracker.nextDueAt();
    if (next !== null && next > now) wakeAt(next);
  }
  const ticker = setInterval(tick, tickMs);

  // A tick when the earliest quiet period seen ends, rather than up to a tick later.
  let wakeTimer: NodeJS.Timeout | null = null;
  let wakeAtMs = Number.POSITIVE_INFINITY;
  function wakeAt(at: number): void {
    if (closed || at >= wakeAtMs) return;
    if (wakeTimer) clearTimeout(wakeTimer);
    wakeAtMs = at;
    wakeTimer = setTimeout(
      () => {
        wakeTimer = null;
        wakeAtMs = Number.POSITIVE_INFINITY;
        tick();
      },
      Math.max(0, at - Date.now()),
    );
  }

  // ---- pause / resume -----------------------------------------------------------------------------

  async function stopHints(): Promise<void> {
    const h = hints;
    hints = null;
    await h?.close().catch(() => undefined);
  }

  function startHints(): void {
    if (opts.hints === false || hints !== null || closed) return;
    hints = startFileHints({
      root,
      poll: opts.poll ?? false,
      pollIntervalMs: opts.pollIntervalMs ?? WATCH_DEFAULTS.pollIntervalMs,
      delayMs: WATCH_DEFAULTS.hintDelayMs,
      onPaths: (paths) => void track(lookAtPaths(paths)),
      onRootGone: () => void track(checkGuardNow()),
      onError: (err) => {
        problem(WATCH_TEXTS.hintError(errnoWords(err)));
        void track(checkGuardNow());
      },
    });
  }

  function pause(message: string): void {
    if (closed) return;
    if (paused && message === pauseReason) return;
    const first = !paused;
    paused = true;
    pauseReason = message;
    if (first) {
      counters.pauses += 1;
      void track(stopHints());
      schedule(retryMs);
    }
    try {
      opts.onPause?.(message);
    } catch {
      // a listener's own failure is not the watcher's
    }
  }

  function resume(): void {
    paused = false;
    pauseReason = null;
    startHints();
    try {
      opts.onResume?.();
    } catch {
      // a listener's own failure is not the watcher's
    }
  }

  async function checkGuardNow(): Promise<void> {
    if (paused || closed) return;
    const v = await guard.check();
    if (!v.ok) pause(v.message);
  }

  async function lookAtPaths(paths: string[]): Promise<void> {
    for (const p of paths) {
      if (paused || closed) return;
      const seen = await lookAtPath(rules, p).catch(() => null);
      if (seen && !paused && !closed) observe(seen.input, seen.absPath, seen.sig);
    }
  }

  // ---- rescans ------------------------------------------------------------------------------------

  function protectUnder(dirs: string[]): (input: string) => boolean {
    if (dirs.length === 0) return () => false;
    return (input) => dirs.some((d) => input.startsWith(`${d}/`));
  }

  /** Waits, at most hintsReadyWaitMs, for file events to be live (see file-hints.ts). */
  async function hintsLive(): Promise<void> {
    const h = hints;
    if (h === null) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      h.ready,
      new Promise<void>((r) => {
        timer = setTimeout(r, WATCH_DEFAULTS.hintsReadyWaitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  async function rescanOnce(): Promise<RescanResult | null> {
    await hintsLive();
    if (closed) return null;
    const before = await guard.check();
    if (!before.ok) {
      pause(before.message);
      return null;
    }
    const id = ++scanId;
    const startedAt = Date.now();
    const result = await rescanTree({
      dir: root,
      skipFiles,
      ...(opts.shouldSkip ? { shouldSkip: opts.shouldSkip } : {}),
      signal: closing.signal,
      onFile: (input, absPath, sig) => observe(input, absPath, sig, id),
    });
    if (closed) return result;
    counters.scans += 1;
    lastScan = {
      at: startedAt,
      durationMs: result.durationMs,
      files: result.files,
      complete: result.complete,
    };
    const after = await guard.check();
    if (!after.ok) pause(after.message);
    else if (!result.complete) pause(WATCH_TEXTS.scanFailed(dir, errnoWords(result.error)));
    else {
      const unreadable = result.unreadable.filter((u) => u.code !== 'ENOENT');
      const now = new Set(unreadable.map((u) => u.input));
      for (const u of unreadable) {
        if (!reportedUnreadable.has(u.input))
          problem(WATCH_TEXTS.subfolderUnreadable(u.input, errnoWords(u)));
      }
      reportedUnreadable.clear();
      for (const d of now) reportedUnreadable.add(d);
      tracker.sweep(id, startedAt, Date.now(), protectUnder(result.unreadable.map((u) => u.input)));
    }
    try {
      opts.onScan?.(result);
    } catch {
      // a listener's own failure is not the watcher's
    }
    return result;
  }

  function rescan(): Promise<RescanResult | null> {
    scanning ??= track(rescanOnce()).finally(() => {
      scanning = null;
    });
    return scanning;
  }

  function schedule(ms: number): void {
    if (closed) return;
    if (cycleTimer) clearTimeout(cycleTimer);
    cycleTimer = setTimeout(() => void cycle(), ms);
  }

  /** One turn of the main loop: while paused, try the folder again; else rescan. */
  async function cycle(): Promise<void> {
    cycleTimer = null;
    if (closed) return;
    if (paused) {
      const v = await guard.check();
      if (closed) return;
      if (!v.ok) {
        pause(v.message);
        schedule(retryMs);
        return;
      }
      resume();
    }
    await rescan();
    schedule(paused ? retryMs : rescanMs);
  }

  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    closing.abort(new Error('watcher closed'));
    clearInterval(ticker);
    if (wakeTimer) clearTimeout(wakeTimer);
    if (cycleTimer) clearTimeout(cycleTimer);
    await stopHints();
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  };
  if (opts.signal) {
    if (opts.signal.aborted) await close();
    else opts.signal.addEventListener('abort', () => void close(), { once: true });
  }

  startHints();
  const firstScan = cycle();

  return {
    dir: root,
    firstScan,
    stats: () => ({
      ...tracker.counts(),
      ...counters,
      lastScan,
      paused,
      pauseReason,
    }),
    forget: (input) => tracker.forget(input),
    rescanNow: () => (paused || closed ? Promise.resolve(null) : rescan()),
    close,
  };
}
