/**
 * Shared bench plumbing: start `genpipe serve` as a child process, sample a process's memory from
 * /proc, run a `genpipe` command measuring its wall time, peak RSS and CPU, print a table and write
 * JSON results to bench/results/.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS_DIR = join(ROOT, 'bench', 'results');

export interface ChildEmulator {
  url: string;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `genpipe serve --port 0` with a config file and resolves once it prints its URL. */
export async function spawnEmulator(configPath: string, dataDir?: string): Promise<ChildEmulator> {
  const args = [join(ROOT, 'bin', 'genpipe.js'), 'serve', '--port', '0', '--config', configPath];
  if (dataDir) args.push('--data-dir', dataDir);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`emulator did not start in 30 s: ${stderr}`)), 30_000);
    child.stdout?.on('data', (d) => {
      out += String(d);
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`emulator exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    pid: child.pid ?? 0,
    child,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** Resident set size of a process in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m?.[1] ? Number(m[1]) * 1024 : 0;
}

/** Samples a process's RSS every `everyMs` until stopped; reports the peak. */
export function sampleRss(pid: number, everyMs = 20): { stop(): { peak: number; samples: number } } {
  let peak = 0;
  let samples = 0;
  const t = setInterval(() => {
    try {
      peak = Math.max(peak, rssBytes(pid));
      samples += 1;
    } catch {
      // process gone
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(t);
      try {
        peak = Math.max(peak, rssBytes(pid));
      } catch {
        // process gone
      }
      return { peak, samples };
    },
  };
}

/** utime + stime (s) and VmHWM (bytes) of a live process, from /proc. */
export function procSample(pid: number): { cpuS: number; hwm: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpuS: ticks / 100, hwm: hwm?.[1] ? Number(hwm[1]) * 1024 : 0 };
  } catch {
    return null;
  }
}

/** `npm run build`: bundles the CLI into dist/, so bin/genpipe.js runs it as a user's install does. */
export function buildCli(): void {
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
}

const GNU_TIME = '/usr/bin/time';

export interface MeasuredRun {
  /** Spawn to exit, in seconds. */
  wallS: number;
  /** Peak RSS in bytes. */
  peak: number;
  /** user + sys CPU in seconds. */
  cpuS: number;
  measuredWith: 'time' | 'proc';
}

/**
 * Runs `bin/genpipe.js <args>` in a child process with `env`: its wall time, and its peak RSS and own
 * CPU from GNU time (`/usr/bin/time -f`) when present, else sampled from /proc every 200 ms. Throws,
 * with the end of its stderr, when it exits with a code other than 0 or 1 (1: some file failed).
 * `scratchDir` holds GNU time's output file for the run.
 */
export async function runGenpipeMeasured(
  args: string[],
  env: Record<string, string>,
  scratchDir: string,
): Promise<MeasuredRun> {
  const useTime = existsSync(GNU_TIME);
  const timeFile = join(scratchDir, `time-${process.pid}-${Date.now()}.txt`);
  const cli = [join(ROOT, 'bin', 'genpipe.js'), ...args];
  const [cmd, cmdArgs] = useTime
    ? [GNU_TIME, ['-f', '%M %U %S', '-o', timeFile, process.execPath, ...cli]]
    : [process.execPath, cli];
  const started = Date.now();
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr = (stderr + String(d)).slice(-4000);
  });
  let last: { cpuS: number; hwm: number } | null = null;
  const sampler = useTime
    ? null
    : setInterval(() => {
        last = procSample(child.pid ?? 0) ?? last;
      }, 200);
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  if (sampler) clearInterval(sampler);
  const wallS = (Date.now() - started) / 1000;
  if (code !== 0 && code !== 1) throw new Error(`genpipe ${args[0]} exited with ${code}: ${stderr}`);
  if (useTime) {
    const [kb, user, sys] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
    rmSync(timeFile, { force: true });
    return { wallS, peak: (kb ?? 0) * 1024, cpuS: (user ?? 0) + (sys ?? 0), measuredWith: 'time' };
  }
  const s = last as { cpuS: number; hwm: number } | null;
  return { wallS, peak: s?.hwm ?? 0, cpuS: s?.cpuS ?? 0, measuredWith: 'proc' };
}

export interface BenchRow {
  bench: string;
  metric: string;
  value: number;
  unit: string;
  target?: string;
  pass?: boolean;
}

export function printTable(rows: BenchRow[]): void {
  const cols = ['bench', 'metric', 'value', 'unit', 'target', 'pass'] as const;
  const cells = rows.map((r) => [
    r.bench,
    r.metric,
    Number.isInteger(r.value) ? String(r.value) : r.value.toFixed(3),
    r.unit,
    r.target ?? '',
    r.pass === undefined ? '' : r.pass ? 'yes' : 'NO',
  ]);
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (vals: readonly string[]) => vals.map((v, i) => v.padEnd(widths[i] ?? 0)).join('  ');
  console.log(line(cols));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells) console.log(line(row));
}

export function writeResult(name: string, data: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
  return path;
}

export const MB = 1024 * 1024;

/**
 * Writes an emulator config with one client 'bench' holding `key`, and returns its path. `client`
 * sets its limits; `extra` adds top-level keys (timings, windows, faults...).
 */
export function writeEmulatorConfig(
  dir: string,
  key: string,
  client: { rpm: number; concurrency: number; balance: number },
  extra: Record<string, unknown> = {},
): string {
  const path = join(dir, 'emulator.json');
  writeFileSync(
    path,
    JSON.stringify({ clients: [{ id: 'bench', ...client }], keys: [{ key, client: 'bench' }], ...extra }),
  );
  return path;
}

/** The time of a `--json` event line, ms since the epoch (the CLI writes `at` as an ISO 8601 string). */
export function eventAt(e: { at?: string | number }): number {
  return typeof e.at === 'string' ? Date.parse(e.at) : (e.at ?? 0);
}
