/**
 * Watch restart bench: how soon a restarted `genpipe watch` takes a new file when the inbox already
 * holds 10,000 files an earlier session finished (`BENCH_WATCH_RESTART_FILES`).
 *
 * Setup: an emulator in a child process with quotas that never bind and no queue or processing time.
 * One 16×16 PNG goes through a real `genpipe run` (image_edit, sent inline); its journal row, outputs and
 * result.json are then cloned through the Journal API for the other 9,999 files (same bytes, so the
 * same content hash and recipe hash; outputs hard-linked, content-hash cache filled, reports and
 * thumbnails written, as a session leaves them). Building 10,000 generations for real would take the
 * emulator ~10 minutes and 250 MB of renders.
 *
 * Measured, on a real `genpipe watch --json` child process with the default quiet period (5 s): three
 * new PNGs are renamed into the inbox, 3, 6 and 9 s after the watch prints its first summary line (while
 * the restart still reports its finished files); a file's pick-up latency is the time from its rename
 * to its `item_discovered` event (the runner took it), minus the quiet period. Also shown: to its
 * `checked` event (its upload starts next), the completeness checks the session ran (its closing
 * line), and how long the restart took to report every finished file. Target: the worst pick-up
 * latency <= 2 s.
 *
 * Baseline, in the same run: the same restart with `--recheck-finished` (every finished file waits its
 * quiet period and is decoded again, as before the journal shortcut), one new file 3 s in. It gets
 * `BENCH_WATCH_RESTART_BASELINE_CAP_S` (default 60) seconds; when the new file is not taken by then, its
 * wait is projected from the rate at which finished files were re-checked (they come out in the order
 * they were seen, the new file last).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  copyFile,
  link,
  mkdir,
  mkdtemp,
  readdir,
  realpath,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { type Item, stepOf } from '../src/pipeline/item.ts';
import { writeReports } from '../src/pipeline/report/index.ts';
import { openJournal } from '../src/pipeline/store/sqlite/index.ts';
import { patchItem } from '../test/helpers/item-patch.ts';
import { type BenchRow, eventAt, ROOT, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-watch-restart';
const N = Number(process.env.BENCH_WATCH_RESTART_FILES ?? 10_000);
const QUIET_MS = 5_000;
const DROP_AFTER_MS = 3_000;
const DROP_EVERY_MS = 3_000;
const DROPS = 3;
const BASELINE_CAP_MS = Number(process.env.BENCH_WATCH_RESTART_BASELINE_CAP_S ?? 60) * 1000;
const TARGET_MS = 2_000;
const BIN = join(ROOT, 'bin', 'genpipe.js');

const name = (i: number) => `img-${String(i).padStart(5, '0')}.png`;

interface ChildEvent {
  type: string;
  at: number;
  input?: string;
  state?: string;
  reason?: string | null;
}

/** A genpipe child whose `--json` events and stderr are collected. */
function genpipe(args: string[], env: NodeJS.ProcessEnv) {
  const proc: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: ChildEvent[] = [];
  let buf = '';
  let err = '';
  proc.stdout?.on('data', (d: Buffer) => {
    buf += String(d);
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const e = JSON.parse(line) as Omit<ChildEvent, 'at'> & { at: string };
        events.push({ ...e, at: eventAt(e) });
      } catch {
        // a plain line
      }
      nl = buf.indexOf('\n');
    }
  });
  proc.stderr?.on('data', (d: Buffer) => {
    err += String(d);
  });
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  return { proc, events, stderr: () => err, exited };
}

async function until<T>(
  what: string,
  get: () => T | null | undefined | false,
  timeoutMs: number,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v) return v;
    if (Date.now() > end) throw new Error(`bench watch-restart: no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Makes the inbox with N finished files and their journal (see the module comment). */
async function prepare(
  dir: string,
  url: string,
  env: NodeJS.ProcessEnv,
): Promise<{ inbox: string; out: string }> {
  const inbox = join(dir, 'inbox');
  const out = join(dir, 'out');
  await mkdir(inbox, { recursive: true });
  await writeFile(
    join(inbox, 'genpipe.yaml'),
    'rules:\n  - match: "*.png"\n    input_as: source\n    upload: base64\n' +
      '    request: { type: image_edit, model: uni-1, prompt: "bench" }\n',
  );
  const template = join(inbox, name(0));
  await sharp({ create: { width: 16, height: 16, channels: 3, background: '#3070a0' } })
    .png()
    .toFile(template);
  const first = genpipe(['run', inbox, '--out', out, '--poll-interval', '1', '-q'], env);
  const code = await first.exited;
  if (code !== 0) throw new Error(`bench watch-restart: the first run exited ${code}: ${first.stderr()}`);

  const journal = openJournal({ outDir: out, synchronous: 'NORMAL' });
  const items: Item[] = [];
  try {
    const row = journal.get(name(0));
    const service = (await journal.batches()).at(-1)?.service ?? url;
    if (row?.phase !== 'reported') throw new Error('bench watch-restart: the first run did not finish');
    const outputs = stepOf(row.item).outputs.map((p) => p.slice(name(0).length + 1));
    await journal.startBatch({ inputDir: inbox, service, options: { bench: 'watch-restart' } });
    items.push(row.item);
    await journal.hashFile(template);
    for (let i = 1; i < N; i++) {
      const input = name(i);
      const abs = join(inbox, input);
      await copyFile(template, abs);
      const st = await stat(abs);
      const item: Item = patchItem(row.item, {
        input,
        place: input,
        absPath: abs,
        size: st.size,
        mtimeMs: st.mtimeMs,
        outputs: outputs.map((rel) => `${input}/${rel}`),
      });
      // Planned before its result folder exists, as a run plans it: a folder already there would be
      // someone else's, and the file would be placed beside it (img-00001-1.png).
      journal.plan(
        { ...item, state: 'planned' },
        { contentHash: row.contentHash, recipeHash: row.recipeHash },
      );
      await mkdir(join(out, input), { recursive: true });
      for (const rel of [...outputs, 'result.json'])
        await link(join(out, name(0), rel), join(out, input, rel));
      await journal.save(item);
      await journal.hashFile(abs);
      items.push(item);
    }
    await journal.finishBatch('finished');
  } finally {
    await journal.close();
  }
  // The reports and thumbnails the session that finished them would have left.
  await writeReports(out, items, { startedAt: Date.now(), finishedAt: Date.now(), inputDir: inbox });
  return { inbox, out };
}

interface RestartMeasure {
  /**
   * For each new file, in the order dropped: ms from its rename to its item_discovered, minus the quiet
   * period (null: not taken within the cap).
   */
  pickupMs: (number | null)[];
  /** The same to their `checked` events (the upload starts next). */
  checkedMs: (number | null)[];
  /** Completeness checks the session ran, from its closing line. */
  checks: number | null;
  /** Finished files taken without a check, from the same line. */
  known: number;
  /** Finished files reported (as done) by the time the first new file was dropped, and at the end. */
  knownReportedAtDrop: number;
  knownReported: number;
  /** ms from the first summary line to the last finished file reported (null: not waited for). */
  allKnownReportedMs: number | null;
  /** Finished files handed over per second, from the first to the last. */
  knownPerSecond: number;
  sessionMs: number;
  /** The session's exit code after SIGINT (0: it wound down in time). */
  exitCode: number | null;
}

/**
 * One restarted watch session (see the module comment): `drops` new files are renamed into the inbox,
 * the first DROP_AFTER_MS after the first summary line, then one every DROP_EVERY_MS.
 */
async function restart(
  inbox: string,
  out: string,
  env: NodeJS.ProcessEnv,
  scratch: string,
  opts: { recheck: boolean; drops: number; capMs: number },
): Promise<RestartMeasure> {
  // New files of their own for each session (a file an earlier session finished would be reported done).
  const label = opts.recheck ? 'baseline' : 'restart';
  const newFiles = Array.from({ length: opts.drops }, (_, k) => `zz-new-${label}-${k}.png`);
  const isNew = (input: string | undefined) => input?.startsWith('zz-new-') === true;
  for (const name of await readdir(inbox)) if (isNew(name)) await rm(join(inbox, name));
  const args = [
    'watch',
    inbox,
    '--out',
    out,
    '--json',
    '--quiet-ms',
    String(QUIET_MS),
    '--poll-interval',
    '1',
  ];
  if (opts.recheck) args.push('--recheck-finished');
  const child = genpipe(args, env);
  const started = Date.now();
  try {
    await until('summary line', () => child.stderr().includes('watching '), 60_000);
    const watching = Date.now();
    const doneKnown = () =>
      child.events.filter((e) => e.type === 'item_state' && e.state === 'reported' && !isNew(e.input));
    const find = (input: string, type: string, state?: string) =>
      child.events.find(
        (e) => e.type === type && e.input === input && (state === undefined || e.state === state),
      );
    const dropped: number[] = [];
    let knownReportedAtDrop = 0;
    for (const [k, name] of newFiles.entries()) {
      await new Promise((r) => setTimeout(r, watching + DROP_AFTER_MS + k * DROP_EVERY_MS - Date.now()));
      await sharp({
        create: {
          width: 24,
          height: 24,
          channels: 3,
          background: { r: 160, g: k * 40, b: opts.recheck ? 200 : 60 },
        },
      })
        .png()
        .toFile(join(scratch, name));
      await rename(join(scratch, name), join(inbox, name));
      dropped.push(Date.now());
      if (k === 0) knownReportedAtDrop = doneKnown().length;
    }
    const end = (dropped[0] ?? Date.now()) + opts.capMs;
    const pickupMs: (number | null)[] = [];
    const checkedMs: (number | null)[] = [];
    for (const [k, name] of newFiles.entries()) {
      const discovered = await until('pick-up', () => find(name, 'item_discovered'), end - Date.now()).catch(
        () => null,
      );
      const checked = discovered
        ? await until('check', () => find(name, 'item_state', 'checked'), 60_000).catch(() => null)
        : null;
      pickupMs.push(discovered ? discovered.at - (dropped[k] ?? 0) - QUIET_MS : null);
      checkedMs.push(checked ? checked.at - (dropped[k] ?? 0) - QUIET_MS : null);
    }
    let allKnownReportedMs: number | null = null;
    if (!opts.recheck) {
      await until('every finished file reported', () => doneKnown().length >= N, 10 * 60_000);
      allKnownReportedMs = Math.max(...doneKnown().map((e) => e.at)) - watching;
    }
    const handed = child.events.filter((e) => e.type === 'item_discovered' && !isNew(e.input));
    const spanS = handed.length > 1 ? ((handed.at(-1)?.at ?? 0) - (handed[0]?.at ?? 0)) / 1000 : 0;
    const sessionMs = Date.now() - started;
    child.proc.kill('SIGINT');
    const exitCode = await child.exited;
    const m = /genpipe: (\d+) completeness checks?(?:; (\d+) files? finished)?/.exec(child.stderr());
    if (!m)
      process.stderr.write(
        `  no closing line on checks; the session's stderr ended:\n${child.stderr().slice(-1500)}\n`,
      );
    return {
      pickupMs,
      checkedMs,
      checks: m ? Number(m[1]) : null,
      known: m?.[2] ? Number(m[2]) : 0,
      knownReportedAtDrop,
      knownReported: doneKnown().length,
      allKnownReportedMs,
      knownPerSecond: spanS > 0 ? (handed.length - 1) / spanS : 0,
      sessionMs,
      exitCode,
    };
  } finally {
    if (child.proc.exitCode === null) child.proc.kill('SIGKILL');
  }
}

/** Runs the bench (see the module comment). */
export async function benchWatchRestart(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'genpipe-bench-watch-restart-')));
  const configPath = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 1e6, concurrency: 1000, balance: 1e12 },
    { queue_ms: 0, processing_ms: { image: 0, video: 0 }, abuse_ceiling: 1e12 },
  );
  const emu = await spawnEmulator(configPath, join(dir, 'data'));
  const env: NodeJS.ProcessEnv = { ...process.env, GENPIPE_API_KEY: KEY, GENPIPE_BASE_URL: emu.url };
  try {
    const t0 = Date.now();
    process.stderr.write(`  preparing ${N} finished files...\n`);
    const { inbox, out } = await prepare(dir, emu.url, env);
    const scratch = join(dir, 'scratch');
    await mkdir(scratch, { recursive: true });
    const prepareMs = Date.now() - t0;
    process.stderr.write('  restart...\n');
    const now = await restart(inbox, out, env, scratch, { recheck: false, drops: DROPS, capMs: 5 * 60_000 });
    process.stderr.write('  restart with --recheck-finished (baseline)...\n');
    const base = await restart(inbox, out, env, scratch, {
      recheck: true,
      drops: 1,
      capMs: QUIET_MS + BASELINE_CAP_MS,
    });
    const taken = now.pickupMs.filter((ms): ms is number => ms !== null);
    const worst = taken.length === DROPS ? Math.max(...taken) : Number.NaN;
    const worstChecked = Math.max(...now.checkedMs.map((ms) => ms ?? Number.NaN));
    // Capped: the new file comes after every finished file still to be re-checked at its drop.
    const projectedBaseMs =
      base.pickupMs[0] ?? ((N - base.knownReportedAtDrop) / Math.max(base.knownPerSecond, 1e-9)) * 1000;
    const row = (metric: string, value: number, unit: string): BenchRow => ({
      bench: 'watch-restart',
      metric,
      value,
      unit,
    });
    const rows: BenchRow[] = [
      {
        ...row(
          `new file pick-up after ${N} finished files, minus the quiet period (worst of ${DROPS})`,
          worst,
          'ms',
        ),
        target: `<= ${TARGET_MS}`,
        pass: worst <= TARGET_MS,
      },
      ...now.pickupMs.map((ms, k) =>
        row(
          `  file ${k + 1}, dropped ${(DROP_AFTER_MS + k * DROP_EVERY_MS) / 1000} s in`,
          ms ?? Number.NaN,
          'ms',
        ),
      ),
      row('to the checked event (upload next), worst', worstChecked, 'ms'),
      row('completeness checks at restart', now.checks ?? Number.NaN, 'count'),
      row('finished files taken without a check', now.known, 'count'),
      row(
        'every finished file reported, after the first summary line',
        now.allKnownReportedMs ?? Number.NaN,
        'ms',
      ),
      row(
        `baseline (--recheck-finished): pick-up${base.pickupMs[0] == null ? ', projected' : ''}`,
        projectedBaseMs,
        'ms',
      ),
      row('baseline: finished files re-checked per second', base.knownPerSecond, 'files/s'),
      row(
        `baseline: completeness checks in its ${Math.round(base.sessionMs / 1000)} s session`,
        base.checks ?? Number.NaN,
        'count',
      ),
      row('baseline pick-up / worst pick-up', projectedBaseMs / Math.max(worst, 1), 'x'),
    ];
    return {
      rows,
      data: {
        files: N,
        quietMs: QUIET_MS,
        dropAfterMs: DROP_AFTER_MS,
        dropEveryMs: DROP_EVERY_MS,
        prepareMs,
        restart: now,
        baseline: base,
        projectedBaseMs,
      },
    };
  } finally {
    await emu.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
