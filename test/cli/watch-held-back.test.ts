/**
 * Files a watch holds back as incomplete (stable, but they do not parse) are named where they are
 * counted: on the running summary line, in the closing lines with why and since when, in report.json
 * (`held_back`) and report.html, and by `genpipe status`. `genpipe watch` and `genpipe status` as child
 * processes against the emulator.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator, until } from '../helpers/emulator.ts';
import { schemaFaults } from '../helpers/json-schemas.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  killChildren();
  await emu?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
function report(out: string): any {
  try {
    return JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  } catch {
    return null;
  }
}

it('names the files held back as incomplete on the summary line, at exit, in the reports and in status', async () => {
  const { input: inbox, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(inbox, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const png = await noisePng(96, 96);
  writeFileSync(join(inbox, 'half.png'), png.subarray(0, png.length >> 1));
  const before = Date.now();

  const child = spawnGenpipe(
    ['watch', inbox, '--out', out, '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
    cliEnv(emu),
  );
  await child.until(
    () => child.stderr().includes('1 incomplete, held back: half.png'),
    'the held file named',
  );
  // The running report lists it, with why and since when.
  const running = await until(async () => {
    const r = report(out);
    return r?.held_back?.length === 1 && r.totals.succeeded === 1 ? r : null;
  });
  expect(running.held_back[0]).toMatchObject({
    input: 'half.png',
    reason: expect.stringMatching(/truncated/),
  });
  const since = Date.parse(running.held_back[0].since);
  expect(since).toBeGreaterThanOrEqual(before - 1000);
  expect(running.items.map((i: { input: string }) => i.input)).toEqual(['a.txt']);

  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  expect(child.stderr()).toMatch(
    /1 file held back as incomplete .*\n.* {2}half\.png: image could not be decoded[^\n]*\(held back since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/,
  );
  const final = report(out);
  expect(final.held_back).toEqual(running.held_back);
  expect(schemaFaults('report', final)).toEqual([]); // a watch's report: held_back, no ignored
  expect(final.totals.inputs).toBe(1);
  const html = readFileSync(join(out, 'report.html'), 'utf8');
  expect(html).toContain('Held back as incomplete (1)');
  expect(html).toContain('<td>half.png</td>');

  const status = await runCli(['status', out], cliEnv(emu));
  expect(status.code, status.stderr).toBe(0);
  expect(status.stdout).toMatch(
    /held back as incomplete when the watch stopped at .* UTC .*: 1\n {2}half\.png: image could not be decoded/,
  );
  const asJson = jsonOut(await runCli(['status', out, '--json'], cliEnv(emu)));
  expect(asJson.held_back).toEqual(final.held_back);
  expect(schemaFaults('status', asJson)).toEqual([]);
}, 90_000);

it('a restarted watch holds a file back since the earlier session did, and a signal ends it without "early"', async () => {
  const { input: inbox, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(inbox, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const png = await noisePng(96, 96);
  writeFileSync(join(inbox, 'half.png'), png.subarray(0, png.length >> 1));

  /** One session until it holds half.png back and its report says so, then SIGINT; its output. */
  const session = async (): Promise<{ since: string; output: string }> => {
    const child = spawnGenpipe(
      ['watch', inbox, '--out', out, '--quiet-ms', '200', '--rescan-ms', '300'],
      cliEnv(emu),
    );
    await child.until(
      () => child.stderr().includes('1 incomplete, held back: half.png'),
      'the held file named',
    );
    await until(async () => {
      const r = report(out);
      return r?.finished_at === null && r.held_back?.length === 1 && r.totals.succeeded === 1 ? r : null;
    });
    child.proc.kill('SIGINT');
    expect((await child.exited).code, child.stderr()).toBe(0);
    return { since: report(out).held_back[0].since, output: child.stdout() + child.stderr() };
  };

  const first = await session();
  // A signal is how a watch ends: it stops, not "early".
  expect(first.output).toContain('stopping: Ctrl-C / SIGINT');
  expect(first.output).not.toMatch(/early/);
  // A session stopped before it looked at the file again (still in its quiet period) keeps it held
  // back since then in its report, rather than forgetting it.
  const brief = spawnGenpipe(['watch', inbox, '--out', out, '--quiet-ms', '600000'], cliEnv(emu));
  await brief.until(() => /1 settling/.test(brief.stderr()), 'half.png settling');
  brief.proc.kill('SIGINT');
  expect((await brief.exited).code, brief.stderr()).toBe(0);
  expect(report(out).held_back).toEqual([expect.objectContaining({ input: 'half.png', since: first.since })]);
  const second = await session();
  expect(second.since).toBe(first.since);
  expect(second.output).toContain(
    `(held back since ${first.since.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')})`,
  );
}, 120_000);
