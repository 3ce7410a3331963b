/**
 * The first SIGINT while the client's pacer holds creates back (the key's allowance of 10 creates per
 * 60 s window is used up, 15 files): the held creates are abandoned on the signal, and the process
 * exits as soon as its summary and reports are written — not at the signal's hard deadline (9.5 s,
 * then 5 s more for reports) because the pacer's wake-up for the window kept it alive.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SIGNAL_CHOICES } from '../../src/cli/batch-setup.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { until } from '../helpers/emulator.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';

const CLIENT = 'paced';
const KEY = 'svc-api-signals-paced';
const RECIPE =
  'rules:\n  - match: "**/*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1 }\n';

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'signals-paced',
    clients: [CLIENT],
    keyOf: () => KEY,
    config: {
      clients: [{ id: CLIENT, state: 'active', rpm: 10, concurrency: 100, balance: 1_000_000 }],
      rate_window_s: 60,
      queue_ms: 100,
      processing_ms: { image: 500, video: 500 },
      tiny_outputs: true,
    },
  },
  (bed) => ({ emu, root } = bed),
);

describe('a signal while the pacer holds creates', () => {
  it('exits once its reports are written, well before the hard deadline', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 15 }, (_, i) => [`p${i}.txt`, `paced prompt ${i}`]),
    );
    const { input, out } = await recipeFolder(root, 'paced', RECIPE, files);
    const child = spawnGenpipe(runArgs(input, out, ['--concurrency', '64']), envFor(emu.url, KEY));
    // The window's allowance is used up: the service has 10 generations, the pacer holds the rest.
    await until(async () => (await generationsOf(emu, CLIENT)).length >= 10);
    await child.until((ev) => ev.some((e) => e.type === 'item_state' && e.state === 'submitted'), 'a submit');
    const signalledAt = Date.now();
    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(130);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const report: any = await readJson(join(out, 'report.json'));
    expect(report.totals.inputs).toBe(15);
    expect((await generationsOf(emu, CLIENT)).length).toBe(10);
    // Before, nothing kept it but the pacer's wake-up: it left at the deadline (9.5 s + 5 s).
    expect(exit.at - signalledAt).toBeLessThan(SIGNAL_CHOICES.exitDeadlineMs - 1_500);
  });
});
