/**
 * Shared bench plumbing: start `genpipe serve` as a child process, sample a process's memory from
 * /proc, print a table and write JSON results to bench/results/.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
