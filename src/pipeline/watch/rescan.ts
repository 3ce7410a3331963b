/**
 * One full rescan of the watched tree: the watcher's source of truth. It is discovery itself
 * (src/pipeline/discover.ts), so the watcher and `genpipe run` agree on what an input is (dotfiles,
 * temporary names, sidecars, recipes, symbolic links); only an unreadable subfolder is reported and
 * left out here instead of failing the walk.
 */
import { discover } from '../discover.ts';
import type { InputSelection } from '../input-selection.ts';
import type { Item } from '../item.ts';
import { IgnoredEntries, type ReportIgnored } from '../report/ignored.ts';
import type { Signature } from './stability.ts';

export interface RescanOptions {
  /** The watched folder. */
  dir: string;
  /** Files to leave out wherever they sit (the recipe file and its references). */
  skipFiles?: Iterable<string>;
  /** Further inputs to leave out, by path relative to the watched folder. */
  shouldSkip?: (input: string) => boolean;
  /** --include / --exclude: the files left out are ignored with why; a folder excluded whole is not walked. */
  select?: InputSelection;
  signal?: AbortSignal;
  /** Called for every input found, in discovery order. */
  onFile(input: string, absPath: string, sig: Signature): void;
  /**
   * Called, instead of onFile, for an input discovery failed before any stage (a name that is not valid
   * UTF-8, see raw-names.ts): its item, to be handed over as it is (it has no quiet period to wait
   * out, nothing can open it).
   */
  onFailed?(item: Item): void;
}

export interface RescanResult {
  /** True when the whole tree was walked (unreadable subfolders aside, which are listed). */
  complete: boolean;
  /** Inputs found. */
  files: number;
  /** Subfolders that could not be read, with why. */
  unreadable: Array<{ input: string; code: string }>;
  /** The entries of the tree that are not inputs, with why (as report.json's `ignored` lists them). */
  ignored: ReportIgnored;
  /** Why the walk stopped, when not complete. */
  error: unknown;
  durationMs: number;
}

/**
 * Walks the watched folder once, calling `onFile` for each input. Never throws for the tree's problems:
 * a walk that could not finish comes back with `complete: false` and the error.
 *
 * @example const r = await rescanTree({ dir: 'inbox', onFile: (input, abs, sig) => tracker.observe(input, abs, sig, Date.now(), n) });
 */
export async function rescanTree(opts: RescanOptions): Promise<RescanResult> {
  const started = performance.now();
  const unreadable: RescanResult['unreadable'] = [];
  const ignored = new IgnoredEntries();
  let files = 0;
  try {
    const walk = discover(opts.dir, {
      ...(opts.skipFiles ? { skipFiles: opts.skipFiles } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.select ? { select: { include: opts.select.include, exclude: opts.select.exclude } } : {}),
      onSkip: (input, reason) => ignored.add(input, reason),
      onUnreadableDir: (input, err) => unreadable.push({ input, code: err.code ?? 'error' }),
    });
    for await (const item of walk) {
      if (opts.shouldSkip?.(item.input)) continue;
      files += 1;
      if (item.state === 'failed') opts.onFailed?.(item);
      else opts.onFile(item.input, item.absPath, { size: item.size, mtimeMs: item.mtimeMs });
    }
  } catch (error) {
    const durationMs = performance.now() - started;
    return { complete: false, files, unreadable, ignored: ignored.section(), error, durationMs };
  }
  const durationMs = performance.now() - started;
  return { complete: true, files, unreadable, ignored: ignored.section(), error: null, durationMs };
}
