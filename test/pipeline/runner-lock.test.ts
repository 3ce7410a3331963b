/**
 * One runner per out dir, with real `genpipe run` children against an emulator started here: a runner
 * killed with -9 under a parent that never reaps it (a container without an init) stays a zombie whose
 * pid still answers, and the same command run again resumes and finishes; two runners started at the
 * same instant on one out dir: exactly one works, the other exits 2 naming it, and nothing is sent twice.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { defaultJournalPath, openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { killToZombie, processState } from '../helpers/processes.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import {
  type ChildEvent,
  envFor,
  generationsOf,
  lastStates,
  runToEnd,
  spawnGenpipe,
} from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';

const CLIENTS = ['zombie', 'instant'] as const;
type ClientName = (typeof CLIENTS)[number];
const keyOf = (c: ClientName) => `svc-api-lock-${c}`;

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;
const INPUTS = { 'a.txt': 'a red fox', 'b.txt': 'a blue bird', 'c.txt': 'a green frog' };

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'runner-lock',
    clients: CLIENTS,
    keyOf,
    config: {
      queue_ms: 50,
      // Long enough that a run killed once every input is submitted is still waiting for them.
      processing_ms: { image: 3000, video: 3000 },
    },
  },
  (bed) => ({ emu, root } = bed),
);

const folder = (name: string) => recipeFolder(root, name, RECIPE, INPUTS);

const submitted = (events: readonly ChildEvent[]) =>
  events.filter((e) => e.type === 'item_state' && e.state === 'submitted').length;

/** Every input succeeded, with exactly one generation each at the emulator: the report's. */
async function expectOneGenerationPerInput(client: ClientName, out: string) {
  // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
  const report: any = await readJson(join(out, 'report.json'));
  expect(report.totals).toMatchObject({ inputs: 3, succeeded: 3, unprocessed: 0 });
  const gens = await generationsOf(emu, client);
  expect(gens).toHaveLength(3);
  expect(new Set(gens.map((g) => g.request_id)).size).toBe(3);
  expect(report.items.map((i: { generation_id: string }) => i.generation_id).sort()).toEqual(
    gens.map((g) => g.id).sort(),
  );
}

describe('one runner per out dir', () => {
  it('resumes after kill -9 of a runner whose parent never reaps it (still a zombie)', async () => {
    const { input, out } = await folder('zombie');
    const env = envFor(emu.url, keyOf('zombie'));
    const first = spawnGenpipe(runArgs(input, out), env, { nonReapingParent: true });
    const pid = await first.pid();
    await first.until((ev) => submitted(ev) === 3, 'every input submitted');
    await killToZombie(pid);
    expect(processState(pid)).toBe('Z');
    expect(() => process.kill(pid, 0)).not.toThrow(); // the dead runner's pid still answers
    // Killed mid-batch: its generations were still being waited for.
    expect([...lastStates(first.events).values()]).toEqual(['submitted', 'submitted', 'submitted']);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    expect(processState(pid)).toBe('Z'); // nothing reaped it meanwhile
    await expectOneGenerationPerInput('zombie', out);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const report: any = await readJson(join(out, 'report.json'));
    expect(report.journal.resumed).toBe(3);
  }, 60_000);

  it('lets exactly one of two runners started at the same instant work; the other exits 2 naming it', async () => {
    const { input, out } = await folder('instant');
    const env = envFor(emu.url, keyOf('instant'));
    // Both runners are held at the journal's door (its write lock, taken here) until both reached it,
    // then let through together: they race for the out dir.
    const journalPath = defaultJournalPath(out);
    openJournal({ outDir: out, lock: false, mountInfo: null }).close();
    const door = new Database(journalPath);
    door.exec('BEGIN IMMEDIATE');
    const runners = [spawnGenpipe(runArgs(input, out), env), spawnGenpipe(runArgs(input, out), env)];
    try {
      for (const r of runners) await r.until(() => hasOpen(r.proc.pid!, journalPath), 'the journal opened');
    } finally {
      door.exec('COMMIT');
      await door.close();
    }
    const exits = await Promise.all(runners.map((r) => r.exited));
    const codes = exits.map((e) => e.code).sort();
    expect(codes, runners.map((r) => r.stderr()).join('\n')).toEqual([0, 2]);
    const winner = runners[exits.findIndex((e) => e.code === 0)]!;
    const loser = runners[exits.findIndex((e) => e.code === 2)]!;
    expect(loser.stderr()).toContain(`another genpipe (pid ${winner.proc.pid},`);
    expect(loser.stderr()).toContain(`already working on the out dir ${out}`);
    expect(loser.events.filter((e) => e.type === 'item_state')).toEqual([]);
    await expectOneGenerationPerInput('instant', out);
  }, 60_000);
});

/** True when process `pid` has `path` open (one of its /proc/<pid>/fd links to it). */
function hasOpen(pid: number, path: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
      } catch {
        return false; // closed meanwhile
      }
    });
  } catch {
    return false;
  }
}
