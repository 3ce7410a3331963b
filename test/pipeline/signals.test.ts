/**
 * SIGINT / SIGTERM on `genpipe run`, with real child processes against an emulator started here: the
 * first signal stops taking new work, gives work already at the service a grace period, leaves the rest
 * to the journal and exits within 10 s of the signal; a second signal exits at once. Either way the
 * journal passes SQLite's integrity check and a second run finishes the batch without submitting
 * anything twice.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { heldGenerations, hold, release, unhold } from '../helpers/emulator.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import {
  allFiles,
  type ChildEvent,
  envFor,
  expectOutputsComplete,
  generationsOf,
  lastStates,
  runToEnd,
  type SlowProxy,
  spawnGenpipe,
} from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';

const CLIENTS = ['term', 'twice', 'many'] as const;
const keyOf = (c: (typeof CLIENTS)[number]) => `svc-api-signals-${c}`;
const RECIPE = 'rules:\n  - match: "*.txt"\n    request: { type: image, model: uni-1 }\n';

let emu: RunningEmulator;
let proxy: SlowProxy;
let root: string;

useChildRunBed(
  { name: 'signals', clients: CLIENTS, keyOf, proxy: true, config: { tiny_outputs: false } },
  (bed) => ({ emu, proxy, root } = bed),
);

const promptFolder = (name: string, n: number) =>
  recipeFolder(
    root,
    name,
    RECIPE,
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}.txt`, `prompt number ${i}`])),
  );

/** The journal opened on its own: SQLite's integrity check, and the phase of every active row. */
function inspectJournal(out: string): { integrity: string; phases: Record<string, string> } {
  const db = new Database(join(out, '.genpipe', 'journal.db'), { readonly: true });
  try {
    const integrity = String(db.pragma('integrity_check', { simple: true }));
    const rows = db.prepare('SELECT input, phase FROM items WHERE superseded_at IS NULL').all() as Array<{
      input: string;
      phase: string;
    }>;
    return { integrity, phases: Object.fromEntries(rows.map((r) => [r.input, r.phase])) };
  } finally {
    db.close();
  }
}

/** The inputs in the order they were first submitted. */
const submittedInOrder = (events: readonly ChildEvent[]) => [
  ...new Set(
    events.filter((e) => e.type === 'item_state' && e.state === 'submitted').map((e) => e.input as string),
  ),
];

/** How many inputs wait for a job slot: uploaded (a prompt file's upload is nothing), never submitted. */
const waitingForTheSlot = (events: readonly ChildEvent[]) => {
  const sent = submittedInOrder(events);
  return [...lastStates(events)].filter(([input, state]) => state === 'uploaded' && !sent.includes(input))
    .length;
};

const statesAfterStop = (events: readonly ChildEvent[]) => {
  const at = events.findIndex((e) => e.type === 'batch_stopping');
  return events
    .slice(at + 1)
    .filter((e) => e.type === 'item_state')
    .map((e) => e.state);
};

describe('signals', () => {
  it('SIGTERM: no new work, in-flight work cut at the grace period, exit within 10 s, resumed later', async () => {
    const { input, out } = await promptFolder('term', 6);
    const env = envFor(proxy.url, keyOf('term'));
    // Every job stays processing until the test lets it go, and every output stops after 1 KiB, for as
    // long as the test needs: the grace period runs out on work still at the service and a download
    // still under way. Which file takes the one job slot first is not fixed (the files' local stages
    // run side by side): the first job is let go, its output download stalls, and the next file takes
    // the slot and stays processing.
    proxy.downloadHoldAfter = 1024;
    const jobs = await hold(emu, { client: 'term' });
    let signalledAt = 0;
    let inFlight: string[] = [];
    try {
      // One job at a time: while the second is polled (the first downloading), the other four wait for
      // the job slot, uploaded.
      const first = spawnGenpipe(runArgs(input, out, ['--concurrency', '1']), env);
      // The safety nets of these waits are wide: a loaded machine may take long to start a child.
      const [firstJob] = await heldGenerations(emu, 1, 'term', 90_000);
      await release(emu, firstJob!.id);
      await first.until(
        (ev) =>
          proxy.flows.some((f) => f.kind === 'download' && f.bytes >= 1024) &&
          submittedInOrder(ev).length === 2 &&
          waitingForTheSlot(ev) === 4,
        'one output downloading while the next job is polled and the other four wait for the slot',
        90_000,
      );
      await heldGenerations(emu, 1, 'term');
      inFlight = submittedInOrder(first.events);
      signalledAt = Date.now();
      first.proc.kill('SIGTERM');
      const exit = await first.exited;
      expect(exit.code, first.stderr()).toBe(143);
      expect(exit.at - signalledAt).toBeLessThan(10_000);
      expect(first.stderr()).toContain('genpipe: the batch stopped early: stopped by SIGTERM');
      // Nothing new was started once the signal came: the four others were never submitted.
      expect(statesAfterStop(first.events).filter((s) => s === 'submitted')).toEqual([]);
      expect(await generationsOf(emu, 'term')).toHaveLength(2);
      // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
      const report: any = await readJson(join(out, 'report.json'));
      expect(report.stopped_early).toEqual({ reason: 'stopped by SIGTERM' });
      expect(report.totals).toMatchObject({ inputs: 6, unprocessed: 6, succeeded: 0 });
      for (const name of ['p0.txt', 'p1.txt', 'p2.txt', 'p3.txt', 'p4.txt', 'p5.txt'].filter(
        (n) => !inFlight.includes(n),
      )) {
        const line = report.items.find((i: { input: string }) => i.input === name);
        expect(line.reason).toBe('not processed: the batch stopped early (stopped by SIGTERM)');
      }
      for (const name of inFlight) {
        const line = report.items.find((i: { input: string }) => i.input === name);
        expect(line.reason).toContain('the next run continues it from the journal');
      }
      // The cut downloads left no file behind, under a final name or as .part.
      expect((await allFiles(out)).filter((f) => f.endsWith('.part') || f.endsWith('.png'))).toEqual([]);
      const journal = inspectJournal(out);
      expect(journal.integrity).toBe('ok');
      const names = Array.from({ length: 6 }, (_, i) => `p${i}.txt`);
      expect(journal.phases).toEqual(
        Object.fromEntries(names.map((n) => [n, inFlight.includes(n) ? 'submitted' : 'uploaded'])),
      );
    } finally {
      proxy.downloadHoldAfter = null;
      await unhold(emu, jobs);
    }

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const report: any = await readJson(join(out, 'report.json'));
    expect(report.totals).toMatchObject({ inputs: 6, succeeded: 6, unprocessed: 0 });
    expect(await generationsOf(emu, 'term')).toHaveLength(6);
    expect((await expectOutputsComplete(emu, keyOf('term'), out)).problems).toEqual([]);
  }, 240_000);

  it('a second SIGINT exits at once, with the journal consistent and resumable', async () => {
    const { input, out } = await promptFolder('twice', 3);
    const env = envFor(proxy.url, keyOf('twice'));
    // The three jobs stay processing until both signals have come.
    const jobs = await hold(emu, { client: 'twice' });
    try {
      const first = spawnGenpipe(runArgs(input, out, ['--concurrency', '4']), env);
      await first.until(
        (ev) => ev.filter((e) => e.state === 'submitted').length === 3,
        'three submitted events',
      );
      first.proc.kill('SIGINT');
      await first.until((ev) => ev.some((e) => e.type === 'batch_stopping'), 'the batch stopping');
      const secondSignalAt = Date.now();
      first.proc.kill('SIGINT');
      const exit = await first.exited;
      expect(exit.code, first.stderr()).toBe(130);
      expect(exit.at - secondSignalAt).toBeLessThan(3_000);
      expect(first.stderr()).toContain('stopping at once');
    } finally {
      await unhold(emu, jobs);
    }
    const journal = inspectJournal(out);
    expect(journal.integrity).toBe('ok');
    expect(Object.values(journal.phases)).toEqual(['submitted', 'submitted', 'submitted']);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const report: any = await readJson(join(out, 'report.json'));
    expect(report.totals).toMatchObject({ inputs: 3, succeeded: 3 });
    expect(report.journal.resumed).toBe(3);
    expect(await generationsOf(emu, 'twice')).toHaveLength(3);
  }, 60_000);

  it('a second SIGINT on thousands of files still writes the final reports, the summary and the log end', async () => {
    const { input, out } = await promptFolder('many', 3000);
    const env = envFor(proxy.url, keyOf('many'));
    const log = join(root, 'many.log');
    // Every job stays processing: discovery waits on the in-flight cap, most files are never looked at.
    const jobs = await hold(emu, { client: 'many' });
    try {
      const child = spawnGenpipe(runArgs(input, out, ['--concurrency', '64', '--log-file', log]), env);
      await child.until(
        (ev) => ev.filter((e) => e.state === 'submitted').length >= 20,
        'twenty submitted events',
      );
      child.proc.kill('SIGINT');
      await child.until((ev) => ev.some((e) => e.type === 'batch_stopping'), 'the batch stopping');
      child.proc.kill('SIGINT');
      const exit = await child.exited;
      expect(exit.code, child.stderr()).toBe(130);
      expect(child.stderr()).toContain('stopping at once');
      // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
      const report: any = await readJson(join(out, 'report.json'));
      expect(report.finished_at).not.toBeNull();
      expect(report.totals.pending).toBe(0);
      const lookedAt = report.totals.inputs;
      expect(lookedAt).toBeLessThan(3000);
      expect(report.stopped_early.not_looked_at).toBeGreaterThan(0);
      expect(lookedAt + report.stopped_early.not_looked_at).toBeLessThanOrEqual(3000);
      const html = await readFile(join(out, 'report.html'), 'utf8');
      expect(html).not.toContain('The batch is still running');
      expect(html).toContain('were not looked at');
      expect(child.stderr()).toMatch(new RegExp(`genpipe: ${lookedAt} files: .* not processed`));
      expect(child.stderr()).toContain('not looked at');
      const logText = await readFile(log, 'utf8');
      expect(logText).toMatch(/finished:/);
      expect(logText).toMatch(new RegExp(`${lookedAt} files: `));
      expect(child.events.some((e) => e.type === 'batch_finished')).toBe(true);
    } finally {
      await unhold(emu, jobs);
    }
  }, 120_000);
});
