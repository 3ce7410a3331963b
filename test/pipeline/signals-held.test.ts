/**
 * The first SIGINT while creates are held by the client's concurrency governor (the service's job
 * ceiling is 1, --concurrency 4): no held create is sent afterwards, even when the running job ends
 * during the grace period and frees the ceiling; the held files end `stopped` with their rows back at
 * `uploaded` (their request ids were never used), also when the running job outlasts the grace period;
 * and the next run submits them normally — none fails as "submission outcome unknown", and the service
 * ends with one generation per file.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, heldGenerations, hold, unhold, until } from '../helpers/emulator.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, runToEnd, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';

const CLIENT = 'ceiling';
const KEY = 'svc-api-signals-held-ceiling';
const RECIPE =
  'rules:\n  - match: "*.txt"\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';
const FILES = ['p0.txt', 'p1.txt', 'p2.txt', 'p3.txt'];

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'signals-held',
    clients: [CLIENT],
    keyOf: () => KEY,
    config: {
      clients: [{ id: CLIENT, state: 'active', rpm: 1000, concurrency: 1, balance: 1_000_000 }],
      tiny_outputs: true,
    },
  },
  (bed) => ({ emu, root } = bed),
);

/** The phase of every active journal row, by input. */
function phases(out: string): Record<string, string> {
  const db = new Database(join(out, '.genpipe', 'journal.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT input, phase FROM items WHERE superseded_at IS NULL').all() as Array<{
      input: string;
      phase: string;
    }>;
    return Object.fromEntries(rows.map((r) => [r.input, r.phase]));
  } finally {
    db.close();
  }
}

/** 429s the emulator answered for its job ceiling. */
async function ceilingRefusals(): Promise<number> {
  return (await call(emu, 'GET', '/_emulator/stats', { key: null })).body.rate_limited.concurrency as number;
}

/**
 * Runs the folder with 4 prompt files, SIGINTs it once one job runs (held at the service) and the
 * governor holds the other creates, and lets the job end during the grace period (`endJob: 'grace'`)
 * or only after the run exited (`'after'`). Returns the folder and the generation created before.
 */
async function stopWhileHeld(name: string, endJob: 'grace' | 'after') {
  const { input, out } = await recipeFolder(
    root,
    name,
    RECIPE,
    Object.fromEntries(FILES.map((f, i) => [f, `${name} prompt number ${i}`])),
  );
  const env = envFor(emu.url, KEY);
  const before = (await generationsOf(emu, CLIENT)).length;
  const jobs = await hold(emu, { client: CLIENT, prompt: `^${name} ` });
  let held = true;
  try {
    const first = spawnGenpipe(runArgs(input, out, ['--concurrency', '4']), env);
    // One job runs (held at the service); the ceiling refused another create, so the client's
    // governor has learned it and holds the other creates until that job ends.
    await heldGenerations(emu, 1, CLIENT);
    await until(async () => (await ceilingRefusals()) > refusalsBefore);
    first.proc.kill('SIGINT');
    await first.until((ev) => ev.some((e) => e.type === 'batch_stopping'), 'the batch stopping');
    if (endJob === 'grace') {
      held = false;
      await unhold(emu, jobs); // the ceiling is free again within the grace period
    }
    const exit = await first.exited;
    expect(exit.code, first.stderr()).toBe(130);
  } finally {
    if (held) await unhold(emu, jobs);
  }
  const created = (await generationsOf(emu, CLIENT)).slice(before);
  // No create was sent once the stop began: only the job that ran before it exists.
  expect(created).toHaveLength(1);
  const now = phases(out);
  const [ran] = FILES.filter((f) => now[f] !== 'uploaded');
  // The held files' rows are back at `uploaded`: their creates were never sent.
  expect(FILES.filter((f) => f !== ran).map((f) => now[f])).toEqual(['uploaded', 'uploaded', 'uploaded']);
  expect(['submitted', 'reported']).toContain(now[ran as string]);
  return { input, out, env, ran: ran as string, before, created };
}

/** The next run: every file succeeds, the held ones submitted as never sent, nothing paid twice. */
async function rerun(stopped: Awaited<ReturnType<typeof stopWhileHeld>>): Promise<void> {
  const { input, out, env, ran, before, created } = stopped;
  const second = await runToEnd(runArgs(input, out), env);
  expect(second.code, second.child.stderr()).toBe(0);
  // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
  const report: any = await readJson(join(out, 'report.json'));
  expect(report.totals).toMatchObject({ inputs: 4, succeeded: 4, failed: 0 });
  expect(report.journal.unknown_outcome).toBe(0);
  for (const name of FILES.filter((f) => f !== ran)) {
    const continued = second.child.events.find(
      (e) => e.type === 'item_state' && e.input === name && String(e.reason).startsWith('continued:'),
    );
    expect(continued?.reason).toBe('continued: prompt ready, submitting');
  }
  const all = (await generationsOf(emu, CLIENT)).slice(before);
  expect(all).toHaveLength(FILES.length);
  expect(all[0]?.id).toBe(created[0]?.id);
}

let refusalsBefore = 0;

describe('the first signal with creates held by the governor', () => {
  it('sends none of them when the ceiling frees during the grace period; the next run submits them', async () => {
    refusalsBefore = await ceilingRefusals();
    await rerun(await stopWhileHeld('grace', 'grace'));
  }, 90_000);

  it('records them as never sent when the running job outlasts the grace period', async () => {
    refusalsBefore = await ceilingRefusals();
    await rerun(await stopWhileHeld('after', 'after'));
  }, 90_000);
});
