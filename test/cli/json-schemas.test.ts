/**
 * Every JSON document genpipe writes or prints, produced for real — a `run --json` against the emulator
 * on loopback with its /healthz scraped mid-run, the report.json and result.json files it writes,
 * `status --json`, a `run --dry-run --json`, a chain's steps in each, and a `--json` error — is valid by its schema in
 * docs/schemas/: snake_case keys only, times as ISO 8601 UTC strings, one word per state.
 */
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { writePng } from '../client/client-helpers.ts';
import { FAN_OUT_CHAIN, PROMPT_OR_EDIT_ANY_DEPTH } from '../helpers/chain-recipe.ts';
import { heldGenerations, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { type SchemaName, schemaFaults } from '../helpers/json-schemas.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const RECIPE = PROMPT_OR_EDIT_ANY_DEPTH;

let emu: RunningEmulator;
const promptFolder = usePromptFolders();

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  killChildren();
  await emu?.close();
});

/** The JSON lines of a text (one document each). */
function jsonLines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as unknown);
}

/** Asserts each document is valid by the schema `name`, naming every fault of every one that is not. */
function expectValid(name: SchemaName, docs: readonly unknown[]): void {
  const faults = [...new Set(docs.flatMap((d) => schemaFaults(name, d)))];
  expect(faults, `${name}.schema.json`).toEqual([]);
}

async function readJson(path: string): Promise<unknown> {
  return JSON.parse(await readFile(path, 'utf8')) as unknown;
}

describe('the JSON genpipe writes and prints, by the schemas in docs/schemas/', () => {
  it('run --json events, /healthz, report.json, result.json, status --json, --dry-run --json', async () => {
    // a.txt and c.txt share their content (c reuses a's work: its journal names a.txt); notes.md
    // matches no rule (skipped); big.png is over the service's pixel limit (fails before the service).
    const { input, out } = promptFolder({
      'a.txt': 'a red fox',
      'b.txt': 'a blue bird',
      'c.txt': 'a red fox',
    });
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'notes.md', '# notes');
    await writePng(join(input, 'photo.png'), 40, 30);
    await writePng(join(input, 'big.png'), 9000, 30);

    const held = await hold(emu, { state: 'queued' });
    const child = spawnGenpipe(['run', input, '--out', out, '--json', '--metrics-port', '0'], cliEnv(emu));
    const address = /genpipe: metrics on (http:\/\/\S+)\/metrics\n/;
    await child.until(() => address.test(child.stderr()), 'the metrics address on stderr');
    await heldGenerations(emu, 1);
    const health = await request(`${address.exec(child.stderr())![1]}/healthz`);
    expectValid('health', [await health.body.json()]);
    await unhold(emu, held);
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(1); // big.png failed

    const events = jsonLines(child.stdout());
    expectValid('event', events);
    expect(events.at(-1)).toMatchObject({
      type: 'batch_finished',
      totals: { inputs: 6, succeeded: 4, failed: 1, skipped: 1, unprocessed: 0 },
    });

    const report = (await readJson(join(out, 'report.json'))) as { items: Array<{ result: string | null }> };
    expectValid('report', [report]);
    const results = await Promise.all(
      report.items.flatMap((i) => (i.result ? [readJson(join(out, i.result))] : [])),
    );
    expect(results).toHaveLength(6);
    expectValid('result', results);
    expect(results).toContainEqual(
      expect.objectContaining({ journal: expect.objectContaining({ action: 'reuse', same_as: 'a.txt' }) }),
    );

    const status = await runCli(['status', out, '--json'], cliEnv(emu));
    expect(status.code, status.stderr).toBe(0);
    const summary = JSON.parse(status.stdout) as unknown;
    expectValid('status', [summary]);
    expect(summary).toMatchObject({
      by_kind: { done: 4, failed_before_service: 1, skipped: 1 },
      last_batch: { status: 'finished', input_dir: input, options: { command: 'run', metrics_port: 0 } },
    });

    await writeFile(join(input, 'd.txt'), 'a green frog');
    const dry = await runCli(['run', input, '--out', out, '--dry-run', '--json'], cliEnv(emu));
    expect(dry.code, dry.stderr).toBe(1); // big.png would fail again
    const lines = jsonLines(dry.stdout);
    expectValid('dry-run', lines);
    expect(lines).toContainEqual(expect.objectContaining({ input: 'd.txt', outcome: 'send' }));
  }, 90_000);

  it('a chain: its steps in the events, report.json, result.json and a dry run', async () => {
    const { input, out } = promptFolder({});
    await put(input, 'genpipe.yaml', FAN_OUT_CHAIN);
    await writePng(join(input, 'photo.png'), 40, 30);
    const run = await runCli(['run', input, '--out', out, '--json'], cliEnv(emu), 60_000);
    expect(run.code, run.stderr).toBe(0);
    const events = jsonLines(run.stdout);
    expectValid('event', events);
    expect(events).toContainEqual(expect.objectContaining({ step: 'animate', step_event: 'done' }));
    const report = (await readJson(join(out, 'report.json'))) as { items: Array<{ result: string }> };
    expectValid('report', [report]);
    expect(report.items[0]).toMatchObject({ steps: expect.any(Array) });
    expectValid('result', [await readJson(join(out, report.items[0]!.result))]);

    await writePng(join(input, 'other.png'), 30, 40);
    const dry = await runCli(['run', input, '--out', out, '--dry-run', '--json'], cliEnv(emu));
    expect(dry.code, dry.stderr).toBe(0);
    const lines = jsonLines(dry.stdout);
    expectValid('dry-run', lines);
    expect(lines).toContainEqual(expect.objectContaining({ input: 'other.png', steps: expect.any(Array) }));
  }, 90_000);

  it('a --json error: the service refused the call', async () => {
    const r = await runCli(['generations', 'get', randomUUID(), '--json'], cliEnv(emu));
    expect(r.code).not.toBe(0);
    const line = r.stderr.trim().split('\n').at(-1) ?? '';
    const doc = JSON.parse(line) as { error: Record<string, unknown> };
    expectValid('error', [doc]);
    expect(doc.error).toMatchObject({ status: 404, request_id: expect.any(String) });
  });

  it('the schemas refuse a camelCase key, an epoch-ms time and another word for unprocessed', () => {
    const totals = { inputs: 0, succeeded: 0, failed: 0, skipped: 0, unprocessed: 0, pending: 0 };
    const report = {
      started_at: new Date(0).toISOString(),
      finished_at: null,
      stopped_early: null,
      totals,
      items: [],
    };
    expect(schemaFaults('report', report)).toEqual([]);
    expect(schemaFaults('report', { ...report, startedAt: report.started_at })).toContain(
      'report/ must NOT have additional properties: startedAt',
    );
    expect(schemaFaults('report', { ...report, started_at: 0 })).not.toEqual([]);
    const finished = {
      type: 'batch_finished',
      at: report.started_at,
      totals: { ...totals, pending: undefined },
    };
    delete finished.totals.pending;
    expect(schemaFaults('event', finished)).toEqual([]);
    const { unprocessed, ...rest } = finished.totals;
    expect(schemaFaults('event', { ...finished, totals: { ...rest, stopped: unprocessed } })).not.toEqual([]);
    expect(schemaFaults('event', { ...finished, at: Date.parse(finished.at) })).not.toEqual([]);
  });
});
