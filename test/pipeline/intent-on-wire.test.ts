/**
 * A create's intent (its X-Request-Id) is journaled when the create is about to go on the wire, not
 * when the file enters submit: files whose creates were still held by the client (its job-ceiling
 * governor, its pacer, a retry's wait) when the runner was killed with SIGKILL were never sent, and the
 * next run submits them like any other, failing as "outcome unknown" only the creates that reached the
 * service. Real children: the proxy of resume-helpers.ts holds back the first create's answer, so the
 * client's slow start (one create awaiting its answer while the job ceiling is unknown) keeps every
 * other create waiting in the governor for as long as the test needs.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { runArgs, useChildRunBed } from './child-run.ts';
import {
  envFor,
  generationsOf,
  lastStates,
  runToEnd,
  type SlowProxy,
  spawnGenpipe,
} from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const COMMANDS = ['run', 'watch'] as const;
const keyOf = (client: string) => `svc-api-intent-${client}`;
const FILES = 8;

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
`;

let emu: RunningEmulator;
let proxy: SlowProxy;
let root: string;

useChildRunBed(
  {
    name: 'intent-on-wire',
    clients: COMMANDS,
    keyOf,
    config: { queue_ms: 20, processing_ms: { image: 50, video: 100 } },
    proxy: true,
  },
  (bed) => ({ emu, proxy, root } = bed),
);

/** `watch` with the same output options as runArgs. */
function watchArgs(input: string, out: string): string[] {
  return ['watch', input, '--out', out, '--json', '--poll-interval', '1', '--concurrency', String(FILES)];
}

describe.each(COMMANDS)('%s killed while creates wait in the client', (command) => {
  it('leaves the creates never sent to be submitted by the next run', async () => {
    const CLIENT = command;
    const KEY = keyOf(CLIENT);
    const input = join(root, `${command}-in`);
    const out = join(root, `${command}-out`);
    await put(input, 'genpipe.yaml', RECIPE);
    const names = Array.from({ length: FILES }, (_, i) => `k${i + 1}.txt`);
    for (const name of names) await put(input, name, `kill test ${name}`);
    const env = envFor(proxy.url, KEY);

    const flowsBefore = proxy.flows.length;
    proxy.holdCreates = true;
    let heldRequestId: string;
    try {
      const args =
        command === 'run' ? runArgs(input, out, ['--concurrency', String(FILES)]) : watchArgs(input, out);
      const first = spawnGenpipe(args, env);
      // Every file is at submit (its `uploaded` transition journaled), and the one create sent is
      // carried out at the service but its answer never comes: the others wait in the client.
      await first.until(
        (events) =>
          names.every((n) => lastStates(events).get(n) === 'uploaded') &&
          proxy.flows.slice(flowsBefore).some((f) => f.kind === 'create' && f.held),
        'every file at submit and a create whose answer is held back',
      );
      // Beside the live batch, status calls the create on the wire in progress, not of unknown outcome.
      const live = await runToEnd(['status', out], env);
      expect(live.code, live.child.stderr()).toBe(0);
      expect(live.child.stdout()).toMatch(
        new RegExp(`last batch: #1 of 1, running \\(pid ${first.proc.pid}\\)`),
      );
      expect(live.child.stdout()).not.toContain('outcome unknown');
      expect(live.child.stdout()).toMatch(/^ +1 being submitted by the running batch$/m);
      // So does a dry run.
      const dry = await runToEnd(['run', input, '--out', out, '--dry-run'], env);
      expect(dry.child.stdout()).not.toMatch(/would fail|outcome unknown/);
      expect(dry.child.stdout()).toContain(
        `in progress in the batch running in this out dir (pid ${first.proc.pid})`,
      );
      expect(dry.child.stderr()).toContain('a batch is running in this out dir');
      first.proc.kill('SIGKILL');
      await first.exited;
      const creates = proxy.flows.slice(flowsBefore).filter((f) => f.kind === 'create');
      expect(creates).toHaveLength(1);
      heldRequestId = creates[0]!.requestId!;
    } finally {
      proxy.holdCreates = false;
    }
    const reached = (await generationsOf(emu, CLIENT)).map((g) => g.request_id);
    expect(reached).toContain(heldRequestId);

    // `status` tells the one create that reached the service from the files that were never sent.
    const status = await runToEnd(['status', out, '--json'], env);
    expect(status.code, status.child.stderr()).toBe(0);
    const summary = JSON.parse(status.child.stdout());
    expect(summary.by_kind).toMatchObject({ outcome_unknown: 1, not_submitted: FILES - 1 });
    const plain = (await runToEnd(['status', out], env)).child.stdout();
    expect(plain).toMatch(/last batch: #1 of 1, interrupted \(its runner, pid \d+, is gone\)/);
    // The failure says what the next run does with it, naming the request id, before that run.
    expect(plain).toContain(`: ${JOURNAL_TEXTS.unknownOutcome(heldRequestId)}`);

    const second = await runToEnd(runArgs(input, out, ['--concurrency', String(FILES)]), env);
    expect(second.code, second.child.stderr()).toBe(1);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const report: any = await readJson(join(out, 'report.json'));
    const failed = report.items.filter((i: { status: string }) => i.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ stage: 'submit', reason: JOURNAL_TEXTS.unknownOutcome(heldRequestId) });
    expect(report.totals).toMatchObject({ inputs: FILES, succeeded: FILES - 1, failed: 1 });
    expect(report.journal).toMatchObject({ unknown_outcome: 1 });
    // Each of the others was created once, by the second run.
    const all = await generationsOf(emu, CLIENT);
    expect(all.filter((g) => g.request_id !== heldRequestId)).toHaveLength(FILES - 1);
  }, 90_000);
});
