/**
 * Worker session bench: whether a long-running `genpipe worker` keeps its memory flat as files go
 * through it. An embedded PostgreSQL started by the bench, an emulator with no quota to wait for and
 * short jobs, and ONE `genpipe worker --store`; `genpipe run --store --no-work` hands it a folder of
 * FIRST prompt files (tiny outputs), then the same folder again with MORE files added (the first ones
 * are found done). The worker's peak RSS is sampled through each phase; the figure is the growth of
 * the peak from the first phase to the second, per extra file. Target: at most 2 KB per file (a store
 * that keeps something of every file it admitted grows with every one).
 *
 * Beside it, the store alone, in this process: one PostgreSQL store session admits MORE files and
 * saves each finished (as a worker's sessions do), and the heap it keeps after a full GC is measured
 * per file, with the inputs it still binds for save — a figure the RSS's noise (tens of MB between
 * samples) cannot hide.
 *
 * Environment: GENPIPE_BENCH_WS_FIRST (default 1000) and GENPIPE_BENCH_WS_MORE (default 5000) for a
 * quick run; GENPIPE_BENCH_WS_ROOT: the genpipe checkout whose bin/genpipe.js runs the worker and the
 * runs (default: this one), to measure another version (e.g. main's) with the same bench;
 * GENPIPE_BENCH_WS_ONLY=store: the store session alone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/pipeline/store/postgres/embedded.ts';
import { type BenchRow, ROOT, sampleRss, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-worker-session';
const TARGET_BYTES_PER_FILE = 2048;
const RECIPE =
  'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';

function count(name: string, fallback: number): number {
  const n = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a whole number of files, got ${process.env[name]}`);
  return n;
}

/** Prompt files `from`..`to`-1 in `dir`, with the recipe. */
async function addPrompts(dir: string, from: number, to: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'genpipe.yaml'), RECIPE);
  for (let i = from; i < to; i++)
    await writeFile(join(dir, `prompt-${String(i).padStart(5, '0')}.txt`), `worker session prompt ${i}`);
}

/** A `genpipe` child of checkout `root`; `ready` once its stderr matches `readyRe` (when given). */
function cli(root: string, args: string[], readyRe?: RegExp) {
  const proc: ChildProcess = spawn(process.execPath, [join(root, 'bin', 'genpipe.js'), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const ready = new Promise<void>((resolve, reject) => {
    proc.stderr?.on('data', (d) => {
      stderr += String(d);
      if (stderr.length > 100_000) stderr = stderr.slice(-50_000);
      if (readyRe?.test(stderr)) resolve();
    });
    void exited.then((code) =>
      readyRe && !readyRe.test(stderr)
        ? reject(new Error(`genpipe ${args[0]} exited with ${code}: ${stderr.slice(-2000)}`))
        : resolve(),
    );
  });
  return { proc, ready, exited, stderr: () => stderr };
}

/** How many result.json files are under `dir`. */
function resultCount(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (e.isFile() && e.name === 'result.json') n++;
  return n;
}

/** One `run --no-work` over `input` while the worker's RSS is sampled: the peak, and the wall time. */
async function phase(root: string, workerPid: number, args: string[]): Promise<{ peak: number; ms: number }> {
  const rss = sampleRss(workerPid, 50);
  const started = Date.now();
  const run = cli(root, ['run', ...args, '--no-work', '-q']);
  const code = await run.exited;
  const { peak } = rss.stop();
  if (code !== 0) throw new Error(`genpipe run --no-work exited with ${code}: ${run.stderr().slice(-2000)}`);
  return { peak, ms: Date.now() - started };
}

/** The heap kept per file by one PostgreSQL store session of checkout `root` that admits `files` files. */
async function storeSession(root: string, pg: EmbeddedPostgres, dir: string, files: number) {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const modulePath = ['src/pipeline/store/postgres/index.ts', 'src/pipeline/store-postgres/index.ts']
    .map((p) => join(root, p))
    .find((p) => existsSync(p))!;
  const { openPostgresStore } = (await import(pathToFileURL(modulePath).href)) as {
    openPostgresStore(o: { url: string; outDir: string }): Promise<Record<string, unknown> & BenchStore>;
  };
  const [input, out] = [join(dir, 'store-in'), join(dir, 'store-out')];
  await addPrompts(input, 0, 0);
  await mkdir(out, { recursive: true });
  const store = await openPostgresStore({
    url: await pg.createDatabase(`bench_ss_${Date.now()}`),
    outDir: out,
  });
  try {
    await store.startBatch({ inputDir: input, service: 'http://bench.invalid' });
    const one = async (n: number): Promise<void> => {
      const name = `f${n}.txt`;
      writeFileSync(join(input, name), `store session ${n}`);
      const planned = {
        input: name,
        absPath: join(input, name),
        size: 1,
        mtimeMs: 1,
        state: 'planned',
        rule: { index: 0, match: '*' },
        inputAs: 'prompt',
        steps: [{ name: null, request: { type: 'image', prompt: `p ${n}` }, outputs: [], attempts: 0 }],
      };
      const { item } = await store.admit(planned, { references: {} });
      await store.save({ ...item, state: 'failed', failedAt: 'check', reason: 'bench' });
    };
    const run = async (from: number, to: number): Promise<void> => {
      for (let n = from; n < to; n += 16)
        await Promise.all(Array.from({ length: Math.min(16, to - n) }, (_, k) => one(n + k)));
    };
    await run(0, 200); // warm-up: every statement prepared, every module loaded
    gc();
    const before = process.memoryUsage().heapUsed;
    await run(200, 200 + files);
    gc();
    const after = process.memoryUsage().heapUsed;
    const bound =
      typeof store.boundCount === 'function' ? store.boundCount() : (store.bound as Map<string, number>).size;
    return { perFileBytes: (after - before) / files, bound };
  } finally {
    await store.close();
  }
}

interface BenchStore {
  startBatch(info: { inputDir: string; service: string }): Promise<number>;
  admit(item: object, recipe: { references: object }): Promise<{ item: object }>;
  save(item: object): Promise<void>;
  boundCount?: () => number;
  close(): Promise<void>;
}

export async function benchWorkerSession(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const first = count('GENPIPE_BENCH_WS_FIRST', 1000);
  const more = count('GENPIPE_BENCH_WS_MORE', 5000);
  const root = process.env.GENPIPE_BENCH_WS_ROOT ?? ROOT;
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-worker-session-'));
  const pg = await startEmbeddedPostgres({ volatile: true });
  if (process.env.GENPIPE_BENCH_WS_ONLY === 'store') {
    try {
      const session = await storeSession(root, pg, dir, more);
      const rows: BenchRow[] = [
        {
          bench: 'worker-session',
          metric: `store session: heap kept per file (${more} files)`,
          value: session.perFileBytes,
          unit: 'B',
        },
        {
          bench: 'worker-session',
          metric: 'store session: inputs still bound at the end',
          value: session.bound,
          unit: 'count',
        },
      ];
      return { rows, data: { more, root, session } };
    } finally {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  try {
    const configPath = writeEmulatorConfig(
      dir,
      KEY,
      { rpm: 1e6, concurrency: 1000, balance: 1e9 },
      {
        rate_window_s: 60,
        queue_ms: 0,
        processing_ms: { image: 20, video: 20 },
        abuse_ceiling: 1e9,
        seed: 7,
      },
    );
    const emu = await spawnEmulator(configPath, join(dir, 'data'));
    const url = await pg.createDatabase(`bench_ws_${Date.now()}`);
    const service = ['--base-url', emu.url, '--api-key', KEY];
    const [input, out] = [join(dir, 'in'), join(dir, 'out')];
    const worker = cli(
      root,
      ['worker', '--store', url, '--files-at-once', '64', '--concurrency', '64', ...service],
      /worker ready/,
    );
    try {
      await worker.ready;
      const pid = worker.proc.pid!;
      await addPrompts(input, 0, first);
      process.stderr.write(`  ${first} files through one worker...\n`);
      const one = await phase(root, pid, [input, '--out', out, '--store', url, ...service]);
      await addPrompts(input, first, first + more);
      process.stderr.write(`  then ${more} more...\n`);
      const two = await phase(root, pid, [input, '--out', out, '--store', url, ...service]);
      const done = resultCount(out);
      process.stderr.write(`  one store session admitting ${more} files...\n`);
      const session = await storeSession(root, pg, dir, more);
      const perFile = (two.peak - one.peak) / more;
      const bench = 'worker-session';
      const rows: BenchRow[] = [
        {
          bench,
          metric: 'peak RSS growth per extra file',
          value: perFile / 1024,
          unit: 'KB',
          target: `<= ${TARGET_BYTES_PER_FILE / 1024}`,
          pass: done === first + more && perFile <= TARGET_BYTES_PER_FILE,
        },
        { bench, metric: `worker peak RSS, ${first} files`, value: one.peak / 1024 / 1024, unit: 'MB' },
        { bench, metric: `worker peak RSS, ${more} more`, value: two.peak / 1024 / 1024, unit: 'MB' },
        { bench, metric: `wall time, ${first} files`, value: one.ms / 1000, unit: 's' },
        { bench, metric: `wall time, ${more} more`, value: two.ms / 1000, unit: 's' },
        { bench, metric: 'files with a result', value: done, unit: 'count' },
        {
          bench,
          metric: `store session: heap kept per file (${more} files)`,
          value: session.perFileBytes,
          unit: 'B',
        },
        {
          bench,
          metric: 'store session: inputs still bound at the end',
          value: session.bound,
          unit: 'count',
        },
      ];
      const data = { first, more, root, peaks: [one.peak, two.peak], perFileBytes: perFile, done, session };
      return { rows, data };
    } finally {
      worker.proc.kill('SIGTERM');
      await worker.exited;
      await emu.stop();
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
