/**
 * Distributed bench: one folder on one API key, side by side in the same bench run —
 * - workers: an embedded PostgreSQL started by the bench, three `genpipe worker --store` processes and
 *   `genpipe run --store --no-work` enqueuing the folder (the key's quota shared through the store);
 * - baseline: three independent `genpipe run`s (no store), each given a third of the folder, started at
 *   once on the same key (each learns the key's quota alone).
 * Two emulator configs: request-window bound (20 creates per 5 s, no job ceiling, short jobs) and job
 * ceiling bound (a ceiling of 3 the service never advertises, 1 s jobs). Outputs are tiny (prompt →
 * image stand-ins).
 *
 * Per side: wall time, from the first create the service received (its admin view's earliest
 * created_at) to the last result.json written in the out dirs (its mtime) — process start-up, the
 * enqueue and report writing are not counted; the ideal schedule; their ratio; the 429s the service
 * sent (its admin stats, every kind). Also shown, to see where the time over the ideal goes: when the
 * last create reached the service and when the last job ended there (from the first create).
 *
 * Ideal schedule (no overhead, no polling lag, no network time): creates go out W per window of T
 * seconds, at most C jobs run at once, each takes P = queue_ms + processing_ms (idealScheduleMs of
 * pipeline-schedule.bench.ts): max((⌈n/W⌉ − 1)·T + ⌈last window's n / C⌉·P, ⌈n/C⌉·P).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/pipeline/store/postgres/embedded.ts';
import { type BenchRow, ROOT, spawnEmulator, writeEmulatorConfig } from './lib.ts';
import { idealScheduleMs } from './pipeline-schedule.bench.ts';

const KEY = 'svc-api-bench-distributed';
const WORKERS = 3;
const TARGET = { ratio: 1.2, max429: 3 };

interface Scenario {
  name: string;
  files: number;
  /** Creates per window, and the window in seconds. */
  rpm: number;
  windowS: number;
  /** The service's job ceiling (the emulator client's concurrency; never advertised). */
  ceiling: number;
  queueMs: number;
  processingMs: number;
}

const SCENARIOS: Scenario[] = [
  {
    name: '60 jobs, 20 per 5 s, no ceiling',
    files: 60,
    rpm: 20,
    windowS: 5,
    ceiling: 1000,
    queueMs: 50,
    processingMs: 450,
  },
  {
    name: '30 x 1 s jobs, ceiling 3',
    files: 30,
    rpm: 1000,
    windowS: 60,
    ceiling: 3,
    queueMs: 0,
    processingMs: 1000,
  },
];

interface SideFigures {
  wallMs: number;
  idealMs: number;
  ratio: number;
  rate429: number;
  succeeded: number;
  created: number;
  /** The last create, and the last job's end at the service, from the first create (ms). */
  lastCreateMs: number;
  lastFinishedMs: number;
  /** Every create, from the first (ms, in order): the JSON keeps them. */
  createsMs: number[];
}

const RECIPE =
  'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';

/** A folder of prompt files `from`..`to`-1 with the recipe. */
async function promptFolder(dir: string, from: number, to: number): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'genpipe.yaml'), RECIPE);
  for (let i = from; i < to; i++) {
    await writeFile(join(dir, `prompt-${String(i).padStart(4, '0')}.txt`), `distributed bench prompt ${i}`);
  }
  return dir;
}

/** A `genpipe` child; resolves `ready` once its stderr matches `readyRe` (when given). */
function cli(
  args: string[],
  readyRe?: RegExp,
): { proc: ChildProcess; ready: Promise<void>; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [join(ROOT, 'bin', 'genpipe.js'), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const ready = new Promise<void>((resolve, reject) => {
    proc.stderr?.on('data', (d) => {
      stderr += String(d);
      if (readyRe?.test(stderr)) resolve();
    });
    void exited.then((code) =>
      readyRe && !readyRe.test(stderr)
        ? reject(new Error(`genpipe ${args[0]} exited with ${code}: ${stderr.slice(-2000)}`))
        : resolve(),
    );
  });
  return { proc, ready, exited };
}

/** The newest mtime (ms) of the result.json files under `dir`, and how many there are. */
function results(dir: string): { last: number; count: number } {
  let last = 0;
  let count = 0;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || e.name !== 'result.json') continue;
    count++;
    last = Math.max(last, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return { last, count };
}

/** The three workers and the enqueuing run, on a fresh database of `pg`. */
async function runWorkers(
  pg: EmbeddedPostgres,
  input: string,
  out: string,
  service: string[],
): Promise<void> {
  const url = await pg.createDatabase(`bench_${Date.now()}`);
  const workers = Array.from({ length: WORKERS }, () =>
    cli(['worker', '--store', url, ...service], /worker ready/),
  );
  try {
    await Promise.all(workers.map((w) => w.ready));
    const run = cli(['run', input, '--out', out, '--store', url, '--no-work', '-q', ...service]);
    const code = await run.exited;
    if (code !== 0 && code !== 1) throw new Error(`genpipe run --no-work exited with ${code}`);
  } finally {
    for (const w of workers) w.proc.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
  }
}

/** Three independent runs, a third of the folder each, at once. */
async function runBaseline(dir: string, files: number, service: string[]): Promise<string[]> {
  const outs: string[] = [];
  const runs: Array<Promise<number | null>> = [];
  for (let k = 0; k < WORKERS; k++) {
    const input = await promptFolder(
      join(dir, `in-${k}`),
      Math.floor((k * files) / WORKERS),
      Math.floor(((k + 1) * files) / WORKERS),
    );
    const out = join(dir, `out-${k}`);
    outs.push(out);
    runs.push(cli(['run', input, '--out', out, '-q', ...service]).exited);
  }
  const codes = await Promise.all(runs);
  if (codes.some((c) => c !== 0 && c !== 1))
    throw new Error(`a baseline genpipe run exited with ${codes.join(', ')}`);
  return outs;
}

async function runSide(s: Scenario, pg: EmbeddedPostgres, workers: boolean): Promise<SideFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-distributed-'));
  try {
    const configPath = writeEmulatorConfig(
      dir,
      KEY,
      { rpm: s.rpm, concurrency: s.ceiling, balance: 1e9 },
      {
        rate_window_s: s.windowS,
        queue_ms: s.queueMs,
        processing_ms: { image: s.processingMs, video: s.processingMs },
        abuse_ceiling: 1e9,
        seed: 13,
      },
    );
    const emu = await spawnEmulator(configPath, join(dir, 'data'));
    try {
      const service = ['--base-url', emu.url, '--api-key', KEY];
      let outs: string[];
      if (workers) {
        const input = await promptFolder(join(dir, 'in'), 0, s.files);
        await runWorkers(pg, input, join(dir, 'out'), service);
        outs = [join(dir, 'out')];
      } else outs = await runBaseline(dir, s.files, service);
      return await figures(s, emu.url, outs);
    } finally {
      await emu.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function figures(s: Scenario, emuUrl: string, outs: string[]): Promise<SideFigures> {
  const stats = (await request(`${emuUrl}/_emulator/stats`).then((r) => r.body.json())) as {
    rate_limited: Record<string, number>;
  };
  const gens = (
    (await request(`${emuUrl}/_emulator/generations`).then((r) => r.body.json())) as {
      data: Array<{ created_at: string; finished_at: string | null }>;
    }
  ).data;
  const firstCreate = Math.min(...gens.map((g) => Date.parse(g.created_at)));
  const lastCreateMs = Math.max(...gens.map((g) => Date.parse(g.created_at))) - firstCreate;
  const lastFinishedMs =
    Math.max(...gens.map((g) => Date.parse(g.finished_at ?? g.created_at))) - firstCreate;
  const done = outs.map(results);
  const wallMs = Math.max(...done.map((d) => d.last)) - firstCreate;
  const idealMs = idealScheduleMs(s.files, s.rpm, s.windowS * 1000, s.ceiling, s.queueMs + s.processingMs);
  return {
    wallMs,
    idealMs,
    ratio: wallMs / idealMs,
    rate429: Object.values(stats.rate_limited).reduce((a, b) => a + b, 0),
    succeeded: done.reduce((a, d) => a + d.count, 0),
    created: gens.length,
    lastCreateMs,
    lastFinishedMs,
    createsMs: gens.map((g) => Date.parse(g.created_at) - firstCreate).sort((a, b) => a - b),
  };
}

function rowsOf(s: Scenario, w: SideFigures, base: SideFigures): BenchRow[] {
  const bench = `distributed: ${s.name}`;
  const all = w.succeeded === s.files;
  return [
    {
      bench,
      metric: `${WORKERS} workers: wall / ideal`,
      value: w.ratio,
      unit: 'x',
      target: `<= ${TARGET.ratio}`,
      pass: all && w.ratio <= TARGET.ratio,
    },
    {
      bench,
      metric: `${WORKERS} workers: 429s received`,
      value: w.rate429,
      unit: 'count',
      target: `<= ${TARGET.max429}`,
      pass: all && w.rate429 <= TARGET.max429,
    },
    { bench, metric: `${WORKERS} workers: wall time`, value: w.wallMs / 1000, unit: 's' },
    { bench, metric: 'ideal schedule', value: w.idealMs / 1000, unit: 's' },
    { bench, metric: `${WORKERS} workers: last create at`, value: w.lastCreateMs / 1000, unit: 's' },
    { bench, metric: `${WORKERS} workers: last job ended at`, value: w.lastFinishedMs / 1000, unit: 's' },
    { bench, metric: `${WORKERS} workers: files succeeded`, value: w.succeeded, unit: 'count' },
    { bench, metric: `${WORKERS} workers: generations created`, value: w.created, unit: 'count' },
    { bench, metric: `baseline ${WORKERS} runs: wall / ideal`, value: base.ratio, unit: 'x' },
    { bench, metric: `baseline ${WORKERS} runs: 429s received`, value: base.rate429, unit: 'count' },
    { bench, metric: `baseline ${WORKERS} runs: wall time`, value: base.wallMs / 1000, unit: 's' },
    { bench, metric: `baseline ${WORKERS} runs: files succeeded`, value: base.succeeded, unit: 'count' },
    { bench, metric: 'baseline wall / workers wall', value: base.wallMs / w.wallMs, unit: 'x' },
  ];
}

export async function benchDistributed(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const only = process.env.BENCH_DISTRIBUTED_ONLY;
  const rows: BenchRow[] = [];
  const data: Record<string, { workers: SideFigures; baseline: SideFigures }> = {};
  const pg = await startEmbeddedPostgres({ volatile: true });
  try {
    for (const s of SCENARIOS) {
      if (only && !s.name.includes(only)) continue;
      process.stderr.write(`  ${s.name}: ${WORKERS} workers...\n`);
      const workers = await runSide(s, pg, true);
      process.stderr.write(`  ${s.name}: baseline, ${WORKERS} independent runs...\n`);
      const baseline = await runSide(s, pg, false);
      rows.push(...rowsOf(s, workers, baseline));
      data[s.name] = { workers, baseline };
    }
  } finally {
    await pg.stop();
  }
  return { rows, data: { workers: WORKERS, target: TARGET, scenarios: data } };
}
