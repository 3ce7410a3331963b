/**
 * Start-up bench: how long a whole `genpipe` process takes for commands that do next to nothing, against
 * a bare `node -e 0` measured in the same run (the ratio is what counts on a loaded machine).
 *
 * The built CLI (`npm run build` first, as a user's install runs it) is run GENPIPE_BENCH_STARTUP_RUNS
 * times (default 10) for each of: `--version`, `run --help`, `files list --help`, and `status` of an
 * empty out dir (a usage error, exit 2: there is no journal). The runs are interleaved (one of each, bare
 * node included, per round) so that a load that comes and goes hits them alike. Per command: the median
 * wall time (spawn to exit) and its ratio to bare node's median. Target: each ratio at most 3.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchRow, buildCli, ROOT } from './lib.ts';

const BENCH = 'startup';
const RATIO_TARGET = 3;

interface Case {
  name: string;
  args: string[];
  /** The exit code the command ends with. */
  code: number;
}

/** Spawn to exit of `node <args>`, in seconds; throws when it exits with another code than `code`. */
async function timeProcess(args: string[], code: number): Promise<number> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + String(d)).slice(-2000);
  });
  const exit = await new Promise<number | null>((done) => child.once('exit', done));
  const wallS = Number(process.hrtime.bigint() - started) / 1e9;
  if (exit !== code) throw new Error(`node ${args.join(' ')} exited with ${exit}, not ${code}: ${stderr}`);
  return wallS;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export async function benchStartup(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const runs = Number(process.env.GENPIPE_BENCH_STARTUP_RUNS ?? 10);
  buildCli();
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-startup-'));
  try {
    const bin = join(ROOT, 'bin', 'genpipe.js');
    const cases: Case[] = [
      { name: 'bare node -e 0', args: ['-e', '0'], code: 0 },
      { name: '--version', args: [bin, '--version'], code: 0 },
      { name: 'run --help', args: [bin, 'run', '--help'], code: 0 },
      { name: 'files list --help', args: [bin, 'files', 'list', '--help'], code: 0 },
      { name: 'status <empty out dir>', args: [bin, 'status', dir], code: 2 },
    ];
    const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    // One warm-up round: the first start reads node and the modules from disk.
    for (const c of cases) await timeProcess(c.args, c.code);
    for (let round = 0; round < runs; round++) {
      for (const c of cases) times.get(c.name)?.push(await timeProcess(c.args, c.code));
    }
    const bare = median(times.get('bare node -e 0') ?? []);
    const rows: BenchRow[] = [{ bench: BENCH, metric: 'bare node -e 0, median', value: bare, unit: 's' }];
    const results = cases.map((c) => {
      const wallS = median(times.get(c.name) ?? []);
      return {
        name: c.name,
        args: c.args.slice(1),
        medianS: wallS,
        ratio: wallS / bare,
        runsS: times.get(c.name),
      };
    });
    for (const r of results.slice(1)) {
      rows.push(
        { bench: BENCH, metric: `${r.name}, median`, value: r.medianS, unit: 's' },
        {
          bench: BENCH,
          metric: `${r.name} / bare node`,
          value: r.ratio,
          unit: 'ratio',
          target: `<= ${RATIO_TARGET}`,
          pass: r.ratio <= RATIO_TARGET,
        },
      );
    }
    return { rows, data: { runs, bareMedianS: bare, ratioTarget: RATIO_TARGET, results } };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
