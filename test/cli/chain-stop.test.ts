/**
 * A chain whose batch stops between its steps, through the CLI with `--json`, against an emulator on
 * loopback whose balance pays for the first step only: the second step's create is refused (402), the
 * batch stops. Every `stopped` event says no stage moved the item (`stage: null`, as for a single
 * request): the step's own and the item's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestEmulator } from '../helpers/emulator.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

/** The still costs 3, the video 10: a balance of 5 pays for the still only. */
const COSTS = { image: 2, image_edit: 3, video: 10, video_edit: 7, video_reframe: 5 };

const CHAIN = `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor" }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "slow pan", video: { resolution: 360p, start_frame: { from: stylize } } }
`;

const emu = useTestEmulator({
  costs: COSTS,
  tiny_outputs: true,
  clients: [
    { id: 'a', state: 'active', rpm: 1000, concurrency: 50, balance: 5 },
    { id: 'b', state: 'active', rpm: 1000, concurrency: 50, balance: 0 },
  ],
});

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-chain-stop-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON loosely
type Loose = any;

describe('a chain stopped between its steps', () => {
  it('says of every stopped event that no stage moved it, the step stopped named', async () => {
    const input = join(root, 'in');
    await put(input, 'genpipe.yaml', CHAIN);
    await put(input, 'a.png', await noisePng(64, 48));
    const out = join(root, 'out');
    const r = await runCli(
      ['run', input, '--out', out, '--poll-interval', '1', '--json'],
      cliEnv(emu()),
      60_000,
    );
    const events: Loose[] = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const states = events.filter((e) => e.type === 'item_state');
    // The first step ran to its end; the second was stopped at its create.
    expect(states.map((e) => [e.step, e.step_event ?? null, e.state])).toContainEqual([
      'stylize',
      'done',
      'completed',
    ]);
    const stopped = states.filter((e) => e.state === 'stopped');
    expect(stopped.length, r.stdout).toBeGreaterThan(0);
    expect(stopped.at(-1)).toBe(states.at(-1));
    for (const e of stopped) {
      expect(e).toMatchObject({ step: 'animate', stage: null, reason: expect.stringMatching(/balance/) });
    }
  }, 90_000);
});
