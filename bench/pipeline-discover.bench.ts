/**
 * Discovery bench (issue 5): a discovery scan (src/pipeline/discover.ts) of 100,000 files, and one
 * rescan of the watcher over the same tree, each in its own child process so memory is the scan's alone.
 *
 * The tree: 100,000 empty files in 400 subfolders of 250, created once under the OS temp dir and reused
 * between runs (a `.complete` marker, a dotfile discovery skips, records that it is whole).
 *
 * Memory: each child reports the kernel's high-water mark of its resident set (getrusage maxRSS: the
 * true peak, no sampling gaps) and its RSS just before the scan; "growth" is the difference, i.e. what
 * the scan itself added on top of Node + the TypeScript loader. Discovery streams, so its growth stays
 * flat; the watcher must remember every file it saw (size, mtime, state), so its growth is that memory.
 *
 * `BENCH_DISCOVER_FILES` changes the file count (another tree is made for another count).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { discover } from '../src/pipeline/discover.ts';
import { startWatcher } from '../src/pipeline/watch/index.ts';
import { type BenchRow, MB, ROOT } from './lib.ts';

const FILES = Number(process.env.BENCH_DISCOVER_FILES ?? 100_000);
const PER_FOLDER = 250;
const THIS_FILE = fileURLToPath(import.meta.url);

/** What a child process measured. */
interface ScanMeasure {
  files: number;
  ms: number;
  /** Only for the watcher: the steady rescan after the first one. */
  rescanMs?: number;
  rescanFiles?: number;
  rssBeforeBytes: number;
  peakRssBytes: number;
  heapUsedBeforeBytes: number;
  heapUsedAfterBytes: number;
}

/** Makes (or reuses) the tree of `count` empty files; returns its path. */
async function ensureTree(count: number): Promise<string> {
  const dir = join(tmpdir(), `genpipe-bench-discover-${count}`);
  const marker = join(dir, '.complete');
  if (existsSync(marker) && (await readFile(marker, 'utf8')).trim() === String(count)) return dir;
  process.stderr.write(`  creating ${count} files under ${dir} (once)...\n`);
  const folders = Math.ceil(count / PER_FOLDER);
  for (let d = 0; d < folders; d++) {
    const sub = join(dir, `d${String(d).padStart(4, '0')}`);
    await mkdir(sub, { recursive: true });
    const inThis = Math.min(PER_FOLDER, count - d * PER_FOLDER);
    await Promise.all(
      Array.from({ length: inThis }, (_, f) =>
        writeFile(join(sub, `f${String(f).padStart(3, '0')}.jpg`), ''),
      ),
    );
  }
  await writeFile(marker, String(count));
  return dir;
}

/** Runs this file as a child in `mode` over `dir` and parses what it prints. */
function runChild(mode: 'discover' | 'watcher', dir: string): Promise<ScanMeasure> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'run-ts.js'), THIS_FILE, '--child', mode, dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${mode} child exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as ScanMeasure);
      } catch (err) {
        reject(err);
      }
    });
  });
}

const rss = () => process.memoryUsage().rss;
const peakRss = () => process.resourceUsage().maxRSS * 1024;

/** The child's work: one discovery scan, or a watcher's first rescan then a steady one. */
async function childMain(mode: string, dir: string): Promise<void> {
  globalThis.gc?.();
  const rssBeforeBytes = rss();
  const heapUsedBeforeBytes = process.memoryUsage().heapUsed;
  const started = performance.now();
  const measure: ScanMeasure = {
    files: 0,
    ms: 0,
    rssBeforeBytes,
    peakRssBytes: 0,
    heapUsedBeforeBytes,
    heapUsedAfterBytes: 0,
  };
  if (mode === 'discover') {
    for await (const _ of discover(dir)) measure.files += 1;
    measure.ms = performance.now() - started;
  } else {
    const w = await startWatcher({
      dir,
      hints: false,
      quietMs: 3_600_000,
      rescanMs: 3_600_000,
      onReady: () => {},
    });
    await w.firstScan;
    measure.ms = performance.now() - started;
    measure.files = w.stats().lastScan?.files ?? 0;
    const again = performance.now();
    const r = await w.rescanNow();
    measure.rescanMs = performance.now() - again;
    measure.rescanFiles = r?.files ?? 0;
    measure.heapUsedAfterBytes = process.memoryUsage().heapUsed; // while the watcher still holds its memory
    await w.close();
  }
  if (measure.heapUsedAfterBytes === 0) measure.heapUsedAfterBytes = process.memoryUsage().heapUsed;
  measure.peakRssBytes = peakRss();
  process.stdout.write(`${JSON.stringify(measure)}\n`);
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * The `pipeline-discover` bench: files per second and peak memory of a discovery scan of 100,000 files,
 * and of the watcher's first and steady rescans of the same tree.
 */
export async function benchPipelineDiscover(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = await ensureTree(FILES);
  const scan = await runChild('discover', dir);
  const watch = await runChild('watcher', dir);
  if (scan.files !== FILES) throw new Error(`discovery found ${scan.files} files, expected ${FILES}`);
  const bench = 'pipeline-discover';
  const rows: BenchRow[] = [
    {
      bench,
      metric: `discover: ${FILES} files`,
      value: round((scan.files / scan.ms) * 1000, 0),
      unit: 'files/s',
    },
    { bench, metric: 'discover: wall time', value: round(scan.ms / 1000, 2), unit: 's' },
    { bench, metric: 'discover: peak RSS', value: round(scan.peakRssBytes / MB), unit: 'MB' },
    {
      bench,
      metric: 'discover: RSS growth over the scan',
      value: round((scan.peakRssBytes - scan.rssBeforeBytes) / MB),
      unit: 'MB',
    },
    {
      bench,
      metric: 'watcher: first rescan (learns every file)',
      value: round((watch.files / watch.ms) * 1000, 0),
      unit: 'files/s',
    },
    {
      bench,
      metric: 'watcher: steady rescan',
      value: round(((watch.rescanFiles ?? 0) / (watch.rescanMs ?? 1)) * 1000, 0),
      unit: 'files/s',
    },
    { bench, metric: 'watcher: peak RSS', value: round(watch.peakRssBytes / MB), unit: 'MB' },
    {
      bench,
      metric: 'watcher: RSS growth (its memory of the files)',
      value: round((watch.peakRssBytes - watch.rssBeforeBytes) / MB),
      unit: 'MB',
    },
  ];
  return {
    rows,
    data: {
      files: FILES,
      folders: Math.ceil(FILES / PER_FOLDER),
      tree: dir,
      memory: 'peak = getrusage maxRSS of the child; growth = peak minus RSS just before the scan',
      discover: scan,
      watcher: watch,
    },
  };
}

if (process.argv[1] === THIS_FILE && process.argv[2] === '--child') {
  await childMain(process.argv[3] ?? 'discover', process.argv[4] ?? '.');
}
