/**
 * Same-content bench: what byte copies in a folder cost `genpipe run`. Two inputs of one out dir with the
 * same bytes (sha256 + size) and the same recipe rule are meant to be paid once: one generation, the
 * other file given its outputs in its own out folder (its report.json `journal` reason `reused: same
 * content as <other input>`; `--redo-same-content` opts out).
 *
 * - Case A: N distinct prompt files (`p00000.txt` …) in one folder.
 * - Case B: the same N files plus N byte copies of them under other names — the first half beside
 *   them as `p00000 copy.txt` (a file manager's duplicate, walked next to its original), the second
 *   half in a subfolder as `backup/p00500.txt` — so 2N inputs with N distinct contents.
 * - Case B, redo (only with GENPIPE_BENCH_SC_REDO=1): case B with `--redo-same-content`, the control
 *   that pays for every copy; skipped, with a note, while `genpipe run` does not know the flag.
 *
 * Each case is one `genpipe run` of the built CLI (`npm run build` first, as pipeline-scale) into a
 * fresh out dir, against a fresh `genpipe serve` child of its own, so the emulator's admin view
 * (GET /_emulator/generations) counts that case's generations alone. The emulator: image jobs of 50 ms,
 * `tiny_outputs`, quotas that never bind; the run: `--concurrency 64 --max-reads 200 -q`, otherwise
 * default flags (journal included), one recipe rule taking every .txt file, at any depth, as the
 * prompt of a `uni-1` image 1:1 (as pipeline-scale's).
 *
 * Per case: wall time (process start to exit), generations created, genpipe's peak RSS (GNU time,
 * else /proc), files succeeded, and files whose report.json journal reason says they reused another's
 * outputs. Then B/A of wall time. Targets: B creates N generations; B's wall time
 * within 1.1× A's. A miss shows as NO in the table; the process does not fail for it.
 *
 * Environment:
 * - GENPIPE_BENCH_SC_FILES (default 1000): N, the distinct files (B has 2N inputs), e.g. 100 for a quick run.
 * - GENPIPE_BENCH_SC_ROUNDS (default 1): rounds of A and B, each round starting with the other case;
 *   each case's best wall time is kept (its most generations and highest peak RSS), for a loaded machine.
 * - GENPIPE_BENCH_SC_REDO=1: also run case B with `--redo-same-content`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import {
  type BenchRow,
  buildCli,
  MB,
  ROOT,
  runGenpipeMeasured,
  spawnEmulator,
  writeEmulatorConfig,
} from './lib.ts';

const BENCH = 'same-content';
const KEY = 'svc-api-bench-same-content';
const CONCURRENCY = 64;
/** Status reads per second: each job is read once about 1 s after its create (see pipeline-scale). */
const MAX_READS = 200;
const WALL_RATIO_TARGET = 1.1;
const REUSED_PREFIX = 'reused: same content as';
const REDO_FLAG = '--redo-same-content';
const RECIPE =
  'rules:\n  - match: "**/*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';

type CaseName = 'A' | 'B' | 'B, redo';

interface CaseResult {
  name: CaseName;
  inputs: number;
  distinct: number;
  wallS: number;
  generations: number;
  peakRssMb: number;
  /** genpipe's own CPU, user + sys. */
  cpuS: number;
  succeeded: number;
  reused: number;
  measuredWith: 'time' | 'proc';
}

function whole(name: string, fallback: number): number {
  const n = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a whole number >= 1, got ${process.env[name]}`);
  return n;
}

const stem = (i: number): string => `p${String(i).padStart(5, '0')}`;

/** N distinct prompt files and the recipe; with `copies`, a byte copy of each under another name. */
async function writeInput(dir: string, n: number, copies: boolean): Promise<void> {
  await mkdir(join(dir, 'backup'), { recursive: true });
  await writeFile(join(dir, 'genpipe.yaml'), RECIPE);
  for (let i = 0; i < n; i++) {
    const original = join(dir, `${stem(i)}.txt`);
    await writeFile(original, `same content bench prompt number ${i}`);
    if (!copies) continue;
    await copyFile(
      original,
      i < n / 2 ? join(dir, `${stem(i)} copy.txt`) : join(dir, 'backup', `${stem(i)}.txt`),
    );
  }
}

/** Whether this checkout's `genpipe run` has the opt-out flag. */
function knowsRedoFlag(): boolean {
  const help = spawnSync(process.execPath, [join(ROOT, 'bin', 'genpipe.js'), 'run', '--help'], {
    encoding: 'utf8',
  });
  return help.stdout.includes(REDO_FLAG);
}

/** One case: input written, a fresh emulator, `genpipe run` measured, its generations counted. */
async function runCase(dir: string, name: CaseName, n: number): Promise<CaseResult> {
  const slug = name.replace(/\W+/g, '-');
  const [input, out] = [join(dir, `in-${slug}`), join(dir, `out-${slug}`)];
  const copies = name !== 'A';
  process.stderr.write(`  ${BENCH}: case ${name}: writing ${copies ? 2 * n : n} prompt files...\n`);
  await writeInput(input, n, copies);
  const configPath = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 1e7, concurrency: 10_000, balance: 1e12 },
    { queue_ms: 0, processing_ms: { image: 50, video: 50 }, abuse_ceiling: 1e9, tiny_outputs: true },
  );
  const emu = await spawnEmulator(configPath, join(dir, `data-${slug}`));
  try {
    process.stderr.write(`  ${BENCH}: case ${name}: genpipe run...\n`);
    const args = [
      'run',
      input,
      '--out',
      out,
      '--concurrency',
      String(CONCURRENCY),
      '--max-reads',
      String(MAX_READS),
    ];
    if (name === 'B, redo') args.push(REDO_FLAG);
    const r = await runGenpipeMeasured(
      [...args, '-q'],
      { GENPIPE_BASE_URL: emu.url, GENPIPE_API_KEY: KEY },
      dir,
    );
    const gens = (await request(`${emu.url}/_emulator/generations`).then((res) => res.body.json())) as {
      data: unknown[];
    };
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as {
      totals: { inputs: number; succeeded: number };
      items: Array<{ input: string; reason?: string | null; journal?: string | null }>;
    };
    const inputs = copies ? 2 * n : n;
    if (report.totals.inputs !== inputs)
      throw new Error(`report.json lists ${report.totals.inputs} of ${inputs} inputs`);
    // A reused file's report entry says so in its `journal` reason (result.json: journal.reason).
    const reused = new Set<string>();
    for (const item of report.items) if (item.journal?.startsWith(REUSED_PREFIX)) reused.add(item.input);
    return {
      name,
      inputs,
      distinct: n,
      wallS: r.wallS,
      generations: gens.data.length,
      peakRssMb: r.peak / MB,
      cpuS: r.cpuS,
      succeeded: report.totals.succeeded,
      reused: reused.size,
      measuredWith: r.measuredWith,
    };
  } finally {
    await emu.stop();
    rmSync(input, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
    rmSync(join(dir, `data-${slug}`), { recursive: true, force: true });
  }
}

/** Per case, the best wall time of its rounds, with the most generations and the highest peak RSS. */
function bestOf(runs: CaseResult[]): CaseResult {
  const best = runs.reduce((a, b) => (b.wallS < a.wallS ? b : a));
  return {
    ...best,
    generations: Math.max(...runs.map((r) => r.generations)),
    peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
  };
}

function rowsOf(cases: CaseResult[], n: number): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const c of cases) {
    const at = `${c.name} (${c.inputs} files, ${c.distinct} distinct)`;
    rows.push(
      { bench: BENCH, metric: `${at}: wall`, value: c.wallS, unit: 's' },
      { bench: BENCH, metric: `${at}: generations created`, value: c.generations, unit: 'count' },
      { bench: BENCH, metric: `${at}: peak RSS of genpipe`, value: c.peakRssMb, unit: 'MB' },
      { bench: BENCH, metric: `${at}: CPU of genpipe (user + sys)`, value: c.cpuS, unit: 's' },
      { bench: BENCH, metric: `${at}: succeeded`, value: c.succeeded, unit: 'count' },
      { bench: BENCH, metric: `${at}: reused another's outputs`, value: c.reused, unit: 'count' },
    );
  }
  const a = cases.find((c) => c.name === 'A');
  const b = cases.find((c) => c.name === 'B');
  if (a && b) {
    rows.push(
      {
        bench: BENCH,
        metric: 'B: generations created',
        value: b.generations,
        unit: 'count',
        target: `= ${n}`,
        pass: b.generations === n,
      },
      {
        bench: BENCH,
        metric: 'wall time B / A',
        value: b.wallS / a.wallS,
        unit: 'ratio',
        target: `<= ${WALL_RATIO_TARGET}`,
        pass: b.wallS / a.wallS <= WALL_RATIO_TARGET,
      },
    );
  }
  const redo = cases.find((c) => c.name === 'B, redo');
  if (redo && b)
    rows.push({ bench: BENCH, metric: 'wall time B, redo / B', value: redo.wallS / b.wallS, unit: 'ratio' });
  return rows;
}

export async function benchSameContent(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const n = whole('GENPIPE_BENCH_SC_FILES', 1000);
  const rounds = whole('GENPIPE_BENCH_SC_ROUNDS', 1);
  buildCli();
  const names: CaseName[] = ['A', 'B'];
  let redoNote: string | null = null;
  if (process.env.GENPIPE_BENCH_SC_REDO === '1') {
    if (knowsRedoFlag()) names.push('B, redo');
    else redoNote = `case "B, redo" skipped: genpipe run has no ${REDO_FLAG} flag in this checkout`;
  }
  if (redoNote) process.stderr.write(`  ${BENCH}: ${redoNote}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-same-content-'));
  const runs: CaseResult[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? names : [...names].reverse();
      for (const name of order) runs.push(await runCase(dir, name, n));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const cases = names.map((name) => bestOf(runs.filter((r) => r.name === name)));
  const data = { files: n, rounds, concurrency: CONCURRENCY, maxReads: MAX_READS, redoNote, cases, runs };
  return { rows: rowsOf(cases, n), data };
}
