/**
 * Pipeline scale bench (issue 10, part 3): the cost per item of `genpipe run` as the batch grows. The
 * built CLI (`npm run build` is run first, so bin/genpipe.js runs dist/) processes 1,000, 10,000 and
 * 100,000 prompt files (small text files in a temp dir) against `genpipe serve` in a child process
 * with 50 ms jobs, tiny outputs (`tiny_outputs`: the emulator's rendering would take the 2 cores) and
 * quotas that never bind, with `--concurrency 64 --max-reads 200` and otherwise default flags (journal
 * included).
 *
 * Per size: wall time, the genpipe process's peak RSS and its own CPU (user + sys) per item, both from
 * GNU time (`/usr/bin/time -f`) when present, else sampled from /proc/<pid>/status (VmHWM) and
 * /proc/<pid>/stat; and the ratio of the peak RSS at the largest size to that at 10,000.
 *
 * GENPIPE_BENCH_SCALE_MAX caps the largest size (e.g. 10000 for a quick run); the default runs all
 * three.
 *
 * Real outputs: the same at 1,000 and 6,000 files against an emulator that renders its real images
 * (not `tiny_outputs`), what a user's batch downloads, thumbnails and reports: CPU per item, and the
 * growth of peak RSS per extra item between the two sizes (targets ≤ 8 ms and ≤ 5 KB).
 * GENPIPE_BENCH_SCALE_REAL=0 skips it; GENPIPE_BENCH_SCALE_REAL_MAX caps its sizes too. The throughput is bounded by the job slots (a job holds one until its first read, 1 s after
 * its create) and genpipe's own CPU: wall time grows about linearly with the batch.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BenchRow,
  buildCli,
  MB,
  type MeasuredRun,
  runGenpipeMeasured,
  spawnEmulator,
  writeEmulatorConfig,
} from './lib.ts';

const KEY = 'svc-api-bench-scale';
const SIZES = [1_000, 10_000, 100_000];
const MAX = Number(process.env.GENPIPE_BENCH_SCALE_MAX ?? Number.POSITIVE_INFINITY);
const CONCURRENCY = 64;
/**
 * Status reads per second: each job is read at least once (1 s after its create), so the default 20
 * would cap the batch at 20 items a second (100,000 items: 83 minutes); the emulator's abuse ceiling
 * is raised to match. 64 jobs in flight need about 64.
 */
const MAX_READS = 200;
const RSS_TARGET_MB = 400;
const CPU_TARGET_MS = 8;
/** The real-outputs variant's sizes, and its target for the growth of peak RSS per extra item. */
const REAL_SIZES = [1_000, 6_000];
const REAL_MAX = Number(process.env.GENPIPE_BENCH_SCALE_REAL_MAX ?? Number.POSITIVE_INFINITY);
const RSS_GROWTH_TARGET_KB = 5;

interface SizeResult {
  /** Real outputs (the emulator's images), or tiny ones. */
  real: boolean;
  items: number;
  succeeded: number;
  wallS: number;
  peakRssMb: number;
  cpuS: number;
  cpuMsPerItem: number;
  measuredWith: 'time' | 'proc';
}

async function writePrompts(dir: string, n: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'genpipe.yaml'),
    'rules:\n  - match: "**/*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n',
  );
  // 1,000 files per folder, as a large tree would be.
  for (let i = 0; i < n; i++) {
    const folder = join(dir, `d${String(Math.floor(i / 1000)).padStart(3, '0')}`);
    if (i % 1000 === 0) await mkdir(folder, { recursive: true });
    await writeFile(join(folder, `p${String(i).padStart(6, '0')}.txt`), `bench prompt number ${i}`);
  }
}

/** Runs `genpipe run` over `input`; its peak RSS and CPU from GNU time, else from /proc samples. */
function runCli(input: string, out: string, url: string): Promise<MeasuredRun> {
  const args = [
    'run',
    input,
    '--out',
    out,
    '--concurrency',
    String(CONCURRENCY),
    '--max-reads',
    String(MAX_READS),
    '-q',
  ];
  return runGenpipeMeasured(args, { GENPIPE_BASE_URL: url, GENPIPE_API_KEY: KEY }, join(out, '..'));
}

async function benchSize(dir: string, n: number, url: string, real: boolean): Promise<SizeResult> {
  const input = join(dir, `in-${n}`);
  const out = join(dir, `out-${n}${real ? '-real' : ''}`);
  const what = real ? ' (real outputs)' : '';
  process.stderr.write(`  pipeline-scale: writing ${n} prompt files...\n`);
  await writePrompts(input, n);
  process.stderr.write(`  pipeline-scale: genpipe run over ${n} items${what}...\n`);
  const r = await runCli(input, out, url);
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as {
    totals: { succeeded: number; inputs: number };
  };
  if (report.totals.inputs !== n) throw new Error(`report.json lists ${report.totals.inputs} of ${n} inputs`);
  rmSync(input, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
  return {
    real,
    items: n,
    succeeded: report.totals.succeeded,
    wallS: r.wallS,
    peakRssMb: r.peak / MB,
    cpuS: r.cpuS,
    cpuMsPerItem: (r.cpuS * 1000) / n,
    measuredWith: r.measuredWith,
  };
}

function rowsOf(all: SizeResult[]): BenchRow[] {
  const results = all.filter((r) => !r.real);
  const rows: BenchRow[] = [];
  for (const r of results) {
    const at = `${r.items} items`;
    rows.push(
      { bench: 'pipeline-scale', metric: `${at}: wall`, value: r.wallS, unit: 's' },
      {
        bench: 'pipeline-scale',
        metric: `${at}: peak RSS of genpipe`,
        value: r.peakRssMb,
        unit: 'MB',
        target: `< ${RSS_TARGET_MB}`,
        pass: r.peakRssMb < RSS_TARGET_MB,
      },
      {
        bench: 'pipeline-scale',
        metric: `${at}: genpipe CPU per item`,
        value: r.cpuMsPerItem,
        unit: 'ms',
        target: `<= ${CPU_TARGET_MS}`,
        pass: r.cpuMsPerItem <= CPU_TARGET_MS,
      },
      { bench: 'pipeline-scale', metric: `${at}: succeeded`, value: r.succeeded, unit: 'count' },
    );
  }
  const base = results.find((r) => r.items === 10_000);
  const top = results.at(-1);
  if (base && top && top !== base) {
    rows.push({
      bench: 'pipeline-scale',
      metric: `peak RSS ${top.items} / ${base.items} items`,
      value: top.peakRssMb / base.peakRssMb,
      unit: 'ratio',
      target: '<= 1.25 (flat)',
      pass: top.peakRssMb / base.peakRssMb <= 1.25,
    });
  }
  return [...rows, ...realRowsOf(all.filter((r) => r.real))];
}

/** The real-outputs variant's rows: CPU per item at each size, and peak RSS growth per extra item. */
function realRowsOf(real: SizeResult[]): BenchRow[] {
  const bench = 'pipeline-scale, real outputs';
  const rows: BenchRow[] = [];
  for (const r of real) {
    const at = `${r.items} items`;
    rows.push(
      { bench, metric: `${at}: wall`, value: r.wallS, unit: 's' },
      { bench, metric: `${at}: peak RSS of genpipe`, value: r.peakRssMb, unit: 'MB' },
      {
        bench,
        metric: `${at}: genpipe CPU per item`,
        value: r.cpuMsPerItem,
        unit: 'ms',
        target: `<= ${CPU_TARGET_MS}`,
        pass: r.cpuMsPerItem <= CPU_TARGET_MS,
      },
      { bench, metric: `${at}: succeeded`, value: r.succeeded, unit: 'count' },
    );
  }
  const [small, large] = [real[0], real.at(-1)];
  if (small && large && large.items > small.items) {
    const kb = ((large.peakRssMb - small.peakRssMb) * 1024) / (large.items - small.items);
    rows.push({
      bench,
      metric: `peak RSS growth per extra item (${small.items} → ${large.items})`,
      value: kb,
      unit: 'KB',
      target: `<= ${RSS_GROWTH_TARGET_KB}`,
      pass: kb <= RSS_GROWTH_TARGET_KB,
    });
  }
  return rows;
}

/** Runs `sizes` against a fresh emulator (real outputs, or tiny ones). */
async function benchSizes(dir: string, sizes: number[], real: boolean): Promise<SizeResult[]> {
  const configPath = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 1e7, concurrency: 10_000, balance: 1e12 },
    { queue_ms: 0, processing_ms: { image: 50, video: 50 }, abuse_ceiling: 1e9, tiny_outputs: !real },
  );
  const emu = await spawnEmulator(configPath, join(dir, real ? 'data-real' : 'data'));
  const results: SizeResult[] = [];
  try {
    for (const n of sizes) results.push(await benchSize(dir, n, emu.url, real));
  } finally {
    await emu.stop();
  }
  return results;
}

export async function benchPipelineScale(): Promise<{ rows: BenchRow[]; data: unknown }> {
  buildCli();
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-scale-'));
  const results: SizeResult[] = [];
  try {
    results.push(
      ...(await benchSizes(
        dir,
        SIZES.filter((s) => s <= MAX),
        false,
      )),
    );
    if (process.env.GENPIPE_BENCH_SCALE_REAL !== '0')
      results.push(
        ...(await benchSizes(
          dir,
          REAL_SIZES.filter((s) => s <= REAL_MAX),
          true,
        )),
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows: rowsOf(results), data: { concurrency: CONCURRENCY, sizes: results } };
}
