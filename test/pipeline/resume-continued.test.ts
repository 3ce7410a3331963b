/**
 * Files a stopped run did not finish are continued by the next run, and said to be: real `genpipe run`
 * processes against the emulator, the first stopped early (exit 3) by creates that answer 503 longer
 * than the client retries (`PUT /_emulator/faults`). With one job at a time and more files than the
 * run keeps in flight, the stop finds files at every point before the service: discovered only, planned
 * and checked, uploaded, and one whose create was refused; the files found after the stop are counted
 * only. The next run reports each file the stopped run looked at with a journal reason (null is kept for
 * files seen for the first time) and, since nothing was sent to the service for any of them, does not
 * count them as resumed (`genpipe status` called them not yet submitted), alike in report.json,
 * report.html and the closing summary.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { call } from '../helpers/emulator.ts';
import { runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, runToEnd } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const KEY = 'svc-api-continued-key';
const CLIENT = 'continued';
/** More files than a run with --concurrency 1 keeps in flight on any machine this runs on. */
const FILES = Array.from({ length: 40 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
`;

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'continued',
    clients: [CLIENT],
    keyOf: () => KEY,
    config: { queue_ms: 20, processing_ms: { image: 50, video: 100 } },
  },
  (bed) => ({ emu, root } = bed),
);

const faults = (json: unknown) => call(emu, 'PUT', '/_emulator/faults', { key: null, json });
// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
type Loose = any;

describe('a run after one that stopped early', () => {
  it('continues every file the stopped run left, saying so, and does not count them as resumed', async () => {
    const input = join(root, 'in');
    const out = join(root, 'out');
    await put(input, 'genpipe.yaml', RECIPE);
    for (const f of FILES) await put(input, f, `a lighthouse, number ${f}`);
    const args = runArgs(input, out, ['--concurrency', '1']);
    const env = envFor(emu.url, KEY);

    await faults({ http_503: 1 });
    try {
      const first = await runToEnd(args, env);
      expect(first.code, first.child.stderr()).toBe(3);
    } finally {
      await faults({});
    }
    const stopped: Loose = await readJson(join(out, 'report.json'));
    // The files discovery found after the stop are counted only, not looked at (nor journaled).
    const seen: number = stopped.totals.inputs;
    expect(stopped.totals).toMatchObject({ inputs: seen, unprocessed: seen });
    expect(seen + (stopped.stopped_early.not_looked_at ?? 0)).toBe(FILES.length);
    expect(await generationsOf(emu, CLIENT)).toHaveLength(0);

    // The files are done as fast as the service allows (concurrency is not part of the journal's key).
    const second = await runToEnd([...args, '--concurrency', '20'], env);
    expect(second.code, second.child.stderr()).toBe(0);
    const after: Loose = await readJson(join(out, 'report.json'));
    expect(after.totals).toMatchObject({ inputs: FILES.length, succeeded: FILES.length });
    expect(await generationsOf(emu, CLIENT)).toHaveLength(FILES.length);
    const reasons = after.items.map((i: Loose) => i.journal).filter((r: string | null) => r !== null);
    // Files the stopped run looked at are continued (from the start when it had not got to them);
    // those it never looked at are new to the journal.
    expect(reasons).toHaveLength(seen);
    for (const r of reasons) expect(r).toMatch(/^(continued|resumed): /);
    expect(reasons).toContain(JOURNAL_TEXTS.continued);
    expect(after.journal).toMatchObject({
      resumed: 0,
      reused: 0,
      redone: 0,
      retried: 0,
      unknown_outcome: 0,
    });
    const stderr = second.child.stderr();
    // The journal took up nothing the service had: the summary has no journal line; each file's says it.
    expect(stderr).not.toContain('resumed');
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain(': 0 already done in an earlier run, 0 resumed, 0 redone, 0 retried.');
  }, 120_000);
});
