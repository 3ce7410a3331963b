/**
 * How a file failed by the crash policy is accounted for, with real child processes: `genpipe run
 * --json` killed with SIGKILL while a create's answer is on its way (held back by the proxy of
 * resume-helpers.ts), then run again. The file is a failure of this run with its own count
 * (`unknown_outcome`), not "already done in an earlier run", and its stage is `submit` everywhere: the
 * progress event, report.json and the closing summary.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { call } from '../helpers/emulator.ts';
import { killWhileCreateHeld, runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, runToEnd, type SlowProxy } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const KEY = 'svc-api-resume-unknown-counts';

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;

let emu: RunningEmulator;
let proxy: SlowProxy;
let root: string;

useChildRunBed(
  {
    name: 'resume-unknown',
    clients: ['counts'],
    keyOf: () => KEY,
    config: { queue_ms: 50, processing_ms: { image: 300, video: 1000 } },
    proxy: true,
  },
  (bed) => ({ emu, proxy, root } = bed),
);

describe('a file failed by the crash policy', () => {
  it('counts as unknown_outcome, not as already done, and fails at submit in every account', async () => {
    const input = join(root, 'in');
    const out = join(root, 'out');
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'a.txt', 'a red fox');
    await put(input, 'b.txt', 'a blue bird');
    const env = envFor(proxy.url, KEY);
    const held = await killWhileCreateHeld(proxy, runArgs(input, out, ['--concurrency', '1']), env);
    expect((await generationsOf(emu, 'counts')).map((g) => g.request_id)).toEqual([held]);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(1);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const report: any = await readJson(join(out, 'report.json'));
    const failed = report.items.find((i: { status: string }) => i.status === 'failed');
    expect(failed).toMatchObject({ stage: 'submit', reason: JOURNAL_TEXTS.unknownOutcome(held) });
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 1, failed: 1 });
    expect(report.journal).toMatchObject({ reused: 0, unknown_outcome: 1 });

    // The progress event of the failure names the same stage as report.json.
    const failures = second.child.events.filter(
      (e) => e.type === 'item_state' && e.input === failed.input && e.state === 'failed',
    );
    expect(failures.map((e) => e.stage)).toEqual(['submit']);

    const stderr = second.child.stderr();
    expect(stderr).toContain('2 files: 1 succeeded, 1 failed');
    expect(stderr).toMatch(
      /journal: 0 already done in an earlier run, \d+ resumed, 0 redone, 0 retried, 1 failed with an unknown submission outcome \(--resubmit-unknown submits again\)/,
    );
  }, 60_000);
});

describe('a create whose answer was lost', () => {
  it('says what is known and what the next run does, and the next run says why it fails it', async () => {
    const input = join(root, 'lost-in');
    const out = join(root, 'lost-out');
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'c.txt', 'a white horse');
    const env = envFor(emu.url, KEY);
    const faults = (json: unknown) => call(emu, 'PUT', '/_emulator/faults', { key: null, json });
    await faults({ reset_after: 1 });
    let requestId: string;
    try {
      const first = await runToEnd(runArgs(input, out), env);
      expect(first.code, first.child.stderr()).toBe(1);
      // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
      const item: any = (await readJson(join(out, 'report.json'))).items[0];
      requestId = (await readJson(join(out, 'c.txt', 'result.json'))).request_id;
      expect(item).toMatchObject({ status: 'failed', stage: 'submit' });
      // The service has no lookup by request id: the reason does not send the user to one, and says
      // what the next run does.
      expect(item.reason).toContain(`X-Request-Id ${requestId}`);
      expect(item.reason).not.toMatch(/look it up/);
      expect(item.reason).toContain('cannot be asked about a job by its request id');
      expect(item.reason).toContain('the next run fails it again naming this request id');
      expect(item.reason).toContain('--resubmit-unknown');
    } finally {
      await faults({});
    }
    expect((await generationsOf(emu, 'counts')).filter((g) => g.request_id === requestId)).toHaveLength(1);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(1);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const again: any = await readJson(join(out, 'report.json'));
    expect(again.items[0]).toMatchObject({ status: 'failed', stage: 'submit' });
    expect(again.items[0].reason).toBe(JOURNAL_TEXTS.unknownOutcome(requestId));
    // Nothing was interrupted: the crash policy's words cover a lost answer too.
    expect(again.items[0].reason).not.toContain('after an interruption');
    expect(again.items[0].reason).toContain('its answer was lost');
    expect(again.journal).toMatchObject({ unknown_outcome: 1 });
    expect(again.journal.unknown_submissions_note).toContain('the answer was lost on the network');
    expect((await generationsOf(emu, 'counts')).filter((g) => g.request_id === requestId)).toHaveLength(1);
  }, 60_000);
});
