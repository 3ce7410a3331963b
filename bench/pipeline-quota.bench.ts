/**
 * Pipeline bench: `genpipe run` with its default flags against `genpipe serve`, at the quota's edge —
 * a request window it is not told about, and a job ceiling it must learn. Each scenario runs twice in
 * the same bench run: as genpipe runs by default, and as the baseline (the fixed-interval poller and an
 * assumed 60 s window, BASELINE_ARGS), so the ratio between them is measured on the same machine at
 * the same moment.
 *
 * Per run: wall time (from the batch_started event to the last item reaching its final state, as the
 * --json event stream says; report writing after that is not counted), the ideal schedule, their ratio,
 * the 429s the emulator sent (its admin stats) and the generation reads per job (its admin view counts
 * each generation's GETs).
 *
 * Ideal schedules (no overhead, no polling lag, no network time): creates go out W per window of T
 * seconds; at most C jobs run at once; a job takes P = queue_ms + its processing time.
 * - fixed P: idealScheduleMs (pipeline-schedule.bench.ts);
 * - P drawn per job ([min, max]): the jobs, in the order the service took them, with their actual
 *   processing times (admin view: started_at → finished_at, plus queue_ms), scheduled greedily on C
 *   slots — what a client that knew every job's end at once would reach in that order.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { type BenchRow, eventAt, ROOT, spawnEmulator, writeEmulatorConfig } from './lib.ts';
import { idealScheduleMs } from './pipeline-schedule.bench.ts';

const KEY = 'svc-api-bench-quota';
/** The flags that make `genpipe run` behave as before window learning and completion-aware polling. */
const BASELINE_ARGS = (process.env.BENCH_QUOTA_BASELINE_ARGS ?? '--poll-schedule fixed --rate-window 60')
  .split(' ')
  .filter(Boolean);

interface Scenario {
  name: string;
  files: number;
  /** Creates per window, and the window in seconds. */
  rpm: number;
  windowS: number;
  /** The service's job ceiling (the emulator client's concurrency; never advertised). */
  ceiling: number;
  queueMs: number;
  processingMs: number | [number, number];
  /** Extra `genpipe run` flags (besides the defaults). */
  args: string[];
  /** busyRatio: wall / ideal with one core kept busy beside the run (see busyCore). */
  target?: { ratio?: number; max429?: number; readsPerJob?: number; busyRatio?: number };
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
    args: [],
    target: { ratio: 1.1, max429: 1, busyRatio: 1.3 },
  },
  {
    name: '30 x 1 s jobs, ceiling 3',
    files: 30,
    rpm: 1000,
    windowS: 60,
    ceiling: 3,
    queueMs: 0,
    processingMs: 1000,
    args: [],
    target: { ratio: 1.2, max429: 1, busyRatio: 1.3 },
  },
  {
    name: '16 x 5 s jobs, ceiling 2',
    files: 16,
    rpm: 1000,
    windowS: 60,
    ceiling: 2,
    queueMs: 0,
    processingMs: 5000,
    args: ['--concurrency', '2'],
    target: { ratio: 1.1, max429: 1, readsPerJob: 4, busyRatio: 1.3 },
  },
  {
    name: '200 jobs of 1-20 s, ceiling 8',
    files: 200,
    rpm: 1000,
    windowS: 60,
    ceiling: 8,
    queueMs: 0,
    processingMs: [1000, 20000],
    args: [],
  },
];

interface AdminGeneration {
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  reads: number;
  state: string;
}

interface RunFigures {
  wallMs: number;
  idealMs: number;
  ratio: number;
  rate429: number;
  readsPerJob: number;
  succeeded: number;
}

/**
 * One core kept busy beside the run, as a nightly batch shares its machine: `node -e 'for(;;){}'` until
 * stopped (on this 2-core machine, half of it).
 */
function busyCore(): { stop(): Promise<void> } {
  const spinner: ChildProcess = spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
  return {
    async stop() {
      if (spinner.exitCode !== null || spinner.signalCode !== null) return;
      const gone = new Promise((resolve) => spinner.once('exit', resolve));
      spinner.kill('SIGKILL');
      await gone;
    },
  };
}

/** Greedy list schedule of `jobs` (ms each, in order) on `slots` parallel slots: the makespan. */
export function greedyMakespanMs(jobs: readonly number[], slots: number): number {
  const free = Array.from({ length: Math.max(1, slots) }, () => 0);
  for (const p of jobs) {
    let i = 0;
    for (let k = 1; k < free.length; k++) if ((free[k] as number) < (free[i] as number)) i = k;
    free[i] = (free[i] as number) + p;
  }
  return Math.max(...free);
}

/** Runs `genpipe run` over `input`; the wall time from its --json events and how many succeeded. */
async function runCli(args: string[]): Promise<{ wallMs: number; succeeded: number }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'genpipe.js'), 'run', ...args, '--json', '-q'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let startedAt = 0;
  let lastFinal = 0;
  let succeeded = 0;
  let buffered = '';
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  child.stdout.on('data', (d) => {
    buffered += String(d);
    let nl = buffered.indexOf('\n');
    while (nl !== -1) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      nl = buffered.indexOf('\n');
      let e: { type?: string; at?: string; state?: string };
      try {
        e = JSON.parse(line);
      } catch {
        continue;
      }
      if (e.type === 'batch_started') startedAt = eventAt(e);
      if (e.type === 'item_state' && ['reported', 'failed', 'skipped', 'stopped'].includes(e.state ?? '')) {
        lastFinal = Math.max(lastFinal, eventAt(e));
        if (e.state === 'reported') succeeded++;
      }
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0 && code !== 1) throw new Error(`genpipe run exited with ${code}: ${stderr.slice(-2000)}`);
  return { wallMs: lastFinal - startedAt, succeeded };
}

async function runScenario(s: Scenario, baseline: boolean): Promise<RunFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-quota-'));
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
        seed: 11,
      },
    );
    const input = join(dir, 'in');
    await mkdir(input, { recursive: true });
    await writeFile(
      join(input, 'genpipe.yaml'),
      'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n',
    );
    for (let i = 0; i < s.files; i++) {
      await writeFile(join(input, `prompt-${String(i).padStart(4, '0')}.txt`), `bench prompt number ${i}`);
    }
    const emu = await spawnEmulator(configPath, join(dir, 'data'));
    try {
      const args = [input, '--out', join(dir, 'out'), '--base-url', emu.url, '--api-key', KEY, ...s.args];
      const { wallMs, succeeded } = await runCli(baseline ? [...args, ...BASELINE_ARGS] : args);
      const stats = (await request(`${emu.url}/_emulator/stats`).then((r) => r.body.json())) as {
        rate_limited: Record<string, number>;
      };
      const gens = (
        (await request(`${emu.url}/_emulator/generations`).then((r) => r.body.json())) as {
          data: AdminGeneration[];
        }
      ).data;
      const idealMs = idealOf(s, gens);
      const reads = gens.reduce((a, g) => a + g.reads, 0);
      return {
        wallMs,
        idealMs,
        ratio: wallMs / idealMs,
        rate429: Object.values(stats.rate_limited).reduce((a, b) => a + b, 0),
        readsPerJob: gens.length ? reads / gens.length : 0,
        succeeded,
      };
    } finally {
      await emu.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The scenario's ideal schedule (see the module comment). */
function idealOf(s: Scenario, gens: AdminGeneration[]): number {
  if (!Array.isArray(s.processingMs)) {
    return idealScheduleMs(s.files, s.rpm, s.windowS * 1000, s.ceiling, s.queueMs + s.processingMs);
  }
  const taken = gens
    .filter((g) => g.started_at && g.finished_at)
    .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at))
    .map((g) => s.queueMs + Date.parse(g.finished_at as string) - Date.parse(g.started_at as string));
  return greedyMakespanMs(taken, s.ceiling);
}

function rowsOf(s: Scenario, now: RunFigures, base: RunFigures): BenchRow[] {
  const bench = `pipeline-quota: ${s.name}`;
  const t = s.target ?? {};
  const pass = (ok: boolean | undefined) =>
    ok === undefined ? {} : { pass: ok && now.succeeded === s.files };
  return [
    {
      bench,
      metric: 'wall / ideal',
      value: now.ratio,
      unit: 'x',
      ...(t.ratio !== undefined ? { target: `<= ${t.ratio}` } : {}),
      ...pass(t.ratio === undefined ? undefined : now.ratio <= t.ratio),
    },
    {
      bench,
      metric: '429s received',
      value: now.rate429,
      unit: 'count',
      ...(t.max429 !== undefined ? { target: `<= ${t.max429}` } : {}),
      ...pass(t.max429 === undefined ? undefined : now.rate429 <= t.max429),
    },
    {
      bench,
      metric: 'generation reads per job',
      value: now.readsPerJob,
      unit: 'reads',
      ...(t.readsPerJob !== undefined ? { target: `<= ${t.readsPerJob}` } : {}),
      ...pass(t.readsPerJob === undefined ? undefined : now.readsPerJob <= t.readsPerJob),
    },
    { bench, metric: 'wall time', value: now.wallMs / 1000, unit: 's' },
    { bench, metric: 'ideal schedule', value: now.idealMs / 1000, unit: 's' },
    { bench, metric: 'files succeeded', value: now.succeeded, unit: 'count' },
    { bench, metric: 'baseline: wall / ideal', value: base.ratio, unit: 'x' },
    { bench, metric: 'baseline: 429s received', value: base.rate429, unit: 'count' },
    { bench, metric: 'baseline: generation reads per job', value: base.readsPerJob, unit: 'reads' },
    { bench, metric: 'baseline: files succeeded', value: base.succeeded, unit: 'count' },
    { bench, metric: 'baseline wall / wall', value: base.wallMs / now.wallMs, unit: 'x' },
  ];
}

/** The same scenario with one core busy (busyCore): genpipe's defaults only, against its target. */
async function runBusy(s: Scenario): Promise<{ figures: RunFigures; rows: BenchRow[] }> {
  const busy = busyCore();
  let figures: RunFigures;
  try {
    figures = await runScenario(s, false);
  } finally {
    await busy.stop();
  }
  const bench = `pipeline-quota: ${s.name}`;
  const target = s.target?.busyRatio;
  const ok = (test: boolean) => ({ pass: test && figures.succeeded === s.files });
  const rows: BenchRow[] = [
    {
      bench,
      metric: 'busy core: wall / ideal',
      value: figures.ratio,
      unit: 'x',
      ...(target !== undefined ? { target: `<= ${target}`, ...ok(figures.ratio <= target) } : {}),
    },
    { bench, metric: 'busy core: 429s received', value: figures.rate429, unit: 'count' },
    { bench, metric: 'busy core: files succeeded', value: figures.succeeded, unit: 'count' },
  ];
  return { figures, rows };
}

/**
 * Environment: BENCH_QUOTA_ONLY (a part of a scenario's name: that one alone); BENCH_QUOTA_BUSY=0 skips
 * the busy-core runs (each scenario with a busy target runs again with one core kept busy).
 */
export async function benchPipelineQuota(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const only = process.env.BENCH_QUOTA_ONLY;
  const withBusy = process.env.BENCH_QUOTA_BUSY !== '0';
  const rows: BenchRow[] = [];
  const data: Record<string, { now: RunFigures; baseline: RunFigures; busy: RunFigures | null }> = {};
  for (const s of SCENARIOS) {
    if (only && !s.name.includes(only)) continue;
    process.stderr.write(`  ${s.name}...\n`);
    const now = await runScenario(s, false);
    const base = await runScenario(s, true);
    rows.push(...rowsOf(s, now, base));
    let busy: RunFigures | null = null;
    if (withBusy && s.target?.busyRatio !== undefined) {
      process.stderr.write(`  ${s.name}, one core busy...\n`);
      const b = await runBusy(s);
      busy = b.figures;
      rows.push(...b.rows);
    }
    data[s.name] = { now, baseline: base, busy };
  }
  return { rows, data: { baselineArgs: BASELINE_ARGS, scenarios: data } };
}
