/**
 * A watch's reports are the out dir's history, not one session's: a watch with `--on-done move`
 * restarted after earlier sessions moved their inputs to processed/ and failed/ still reports those
 * inputs as the journal last recorded them, beside the new session's files, and an earlier version of a
 * name whose outputs have a folder of their own beside the new one. `genpipe watch` as a child
 * process against the emulator (a blocked word fails a generation at the service).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { heldGenerations, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { schemaFaults } from '../helpers/json-schemas.ts';
import { claimedSizeBytes } from '../media/claimed-size.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator({ blocked_words: ['forbidden'] });
});

afterAll(async () => {
  killChildren();
  await emu?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
function report(out: string): any {
  return JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
}

const statuses = (r: { items: Array<{ input: string; status: string }> }) =>
  Object.fromEntries(r.items.map((i) => [i.input, i.status]));

/** A path beside the inbox (`processed/a.txt`), its bytes when its name is not valid UTF-8. */
function beside(inbox: string, path: string | Buffer): string | Buffer {
  if (typeof path === 'string') return join(inbox, '..', path);
  return Buffer.concat([Buffer.from(`${join(inbox, '..')}/`), path]);
}

/**
 * One watch session over `inbox` until each of `filed` (paths beside the inbox: `processed/a.txt`) is
 * there, then SIGINT; its exit code.
 */
async function session(
  inbox: string,
  out: string,
  filed: Array<string | Buffer>,
  seen: { stderr?: string } = {},
): Promise<number | null> {
  const child = spawnGenpipe(
    ['watch', inbox, '--out', out, '--json', '--on-done', 'move', '--quiet-ms', '200', '--rescan-ms', '300'],
    cliEnv(emu),
  );
  await child.until(
    () => filed.every((path) => existsSync(beside(inbox, path))),
    `${filed.join(', ')} filed`,
    60_000,
  );
  child.proc.kill('SIGINT');
  const { code } = await child.exited;
  seen.stderr = child.stderr();
  return code;
}

it('a restarted --on-done move watch reports the inputs earlier sessions moved away', async () => {
  const { input: inbox, out } = promptFolder({ 'a.txt': 'a red fox', 'b.txt': 'a forbidden thing' });
  expect(await session(inbox, out, ['processed/a.txt', 'failed/b.txt'])).toBe(0);
  expect(statuses(report(out))).toEqual({ 'a.txt': 'succeeded', 'b.txt': 'failed' });

  writeFileSync(join(inbox, 'c.txt'), 'a small cat');
  const seen: { stderr?: string } = {};
  expect(await session(inbox, out, ['processed/c.txt'], seen)).toBe(0);
  const r = report(out);
  expect(statuses(r)).toEqual({ 'a.txt': 'succeeded', 'b.txt': 'failed', 'c.txt': 'succeeded' });
  // The running line counts what report.json lists and the closing line counts: earlier sessions too.
  expect(seen.stderr).toContain('genpipe: 3 files: 2 succeeded, 1 failed');
  const running = seen.stderr!.split('\n').filter((l) => l.startsWith('watching '));
  expect(running.at(-1), seen.stderr).toMatch(
    /: 3 done \(2 succeeded, 1 failed, 0 skipped\) · 0 in progress/,
  );
  expect(r.totals).toMatchObject({ inputs: 3, succeeded: 2, failed: 1 });
  const b = r.items.find((i: { input: string }) => i.input === 'b.txt');
  expect(b).toMatchObject({ place: 'b.txt', failure_code: 'content_moderated' });
  expect(b.journal).toBe('finished in an earlier session; not taken again in this one');
  expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('a.txt');
  // status counts the failure the watch filed in failed/ as failed, as it counts the moved successes done.
  const status = jsonOut(await runCli(['status', out, '--json'], cliEnv(emu)));
  expect(status.by_kind).toEqual({ done: 2, failed_moved_away: 1 });
  expect(status.failures).toEqual([expect.objectContaining({ input: 'b.txt', retried: false })]);

  // A new version of a name goes to a folder of its own: both versions stay in the history.
  writeFileSync(join(inbox, 'a.txt'), 'a red fox, again');
  expect(await session(inbox, out, ['processed/a-1.txt'])).toBe(0);
  const places = report(out).items.map((i: { input: string; place: string; status: string }) =>
    [i.input, i.place, i.status].join(' '),
  );
  expect(places.sort()).toEqual([
    'a.txt a-1.txt succeeded',
    'a.txt a.txt succeeded',
    'b.txt b.txt failed',
    'c.txt c.txt succeeded',
  ]);
}, 120_000);

it('keeps the files that failed before anything was sent, and status says a moved one is not checked again', async () => {
  const { input: inbox, out } = promptFolder({ 'ok.txt': 'a red fox' });
  writeFileSync(join(inbox, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  // Refused by the local check (each side must be <= 8000px): nothing is uploaded for it.
  writeFileSync(join(inbox, 'h.png'), await claimedSizeBytes('png', 60000, 60000));
  expect(await session(inbox, out, ['processed/ok.txt', 'failed/h.png'])).toBe(0);
  expect(statuses(report(out))).toEqual({ 'h.png': 'failed', 'ok.txt': 'succeeded' });

  writeFileSync(join(inbox, 'c.txt'), 'a small cat');
  expect(await session(inbox, out, ['processed/c.txt'])).toBe(0);
  const r = report(out);
  expect(statuses(r)).toEqual({ 'c.txt': 'succeeded', 'h.png': 'failed', 'ok.txt': 'succeeded' });
  expect(r.totals).toMatchObject({ inputs: 3, succeeded: 2, failed: 1 });
  const h = r.items.find((i: { input: string }) => i.input === 'h.png');
  expect(h.reason).toMatch(/60000x60000px but each side must be <= 8000px/);
  expect(h.journal).toBe('finished in an earlier session; not taken again in this one');

  // status counts h.png as failed, as the successes the watch moved are done: the watch filed it away
  // itself; a re-run does not check it again (it is not in the inbox).
  const status = await runCli(['status', out], cliEnv(emu));
  expect(status.code, status.stderr).toBe(0);
  expect(status.stdout).toMatch(/failed \(1\):\n {2}h\.png: .*60000x60000px/);
  expect(status.stdout).not.toContain('checks them again');
  expect(status.stdout).toMatch(/\n {7}1 failed, moved away\n/);
  expect(status.stdout).toMatch(/ {2}failed, moved away \(1\): leaves them failed/);
  expect(status.stdout).not.toContain('no longer in the input folder');
  const asJson = jsonOut(await runCli(['status', out, '--json'], cliEnv(emu)));
  expect(asJson.by_kind).toEqual({ done: 2, failed_moved_away: 1 });
  expect(asJson.failures).toEqual([expect.objectContaining({ input: 'h.png', retried: false })]);
}, 120_000);

it('a watch stopped by Ctrl-C says so of the files it left, in its lines, report.json and report.html', async () => {
  const { input: inbox, out } = promptFolder({ 'a.txt': 'a red fox', 'slow.txt': 'a held snail' });
  // slow.txt's generation stays processing: the stop's grace runs out with it at the service.
  const held = await hold(emu, { prompt: 'held snail' });
  try {
    const child = spawnGenpipe(
      ['watch', inbox, '--out', out, '--quiet-ms', '200', '--rescan-ms', '300', '--poll-interval', '1'],
      cliEnv(emu),
    );
    await child.until(() => existsSync(join(out, 'a.txt', 'result.json')), 'a.txt done', 60_000);
    await heldGenerations(emu, 1);
    child.proc.kill('SIGINT');
    expect((await child.exited).code, child.stderr()).toBe(0);
    const words =
      'not processed: the watch was stopped (Ctrl-C / SIGINT); it is picked up when the watch starts again';
    expect(child.stdout()).toContain(`slow.txt: ${words}`);
    expect(child.stdout() + child.stderr()).not.toContain('stopped early');

    const r = report(out);
    expect(r.stopped_early).toBeNull();
    expect(r.stopped).toEqual({ reason: 'stopped by Ctrl-C / SIGINT', by: 'Ctrl-C / SIGINT' });
    expect(schemaFaults('report', r)).toEqual([]); // `stopped`, an `unprocessed` item, as the schema has them
    expect(statuses(r)).toEqual({ 'a.txt': 'succeeded', 'slow.txt': 'unprocessed' });
    expect(r.items.find((i: { input: string }) => i.input === 'slow.txt').reason).toMatch(
      new RegExp(`^${words.replace(/[()]/g, '\\$&')}`),
    );
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain(
      'The watch was stopped (Ctrl-C / SIGINT). 1 file was not processed; it is picked up when the watch starts again.',
    );
    expect(html).not.toContain('stopped early');
  } finally {
    await unhold(emu, held);
  }
}, 120_000);

it('keeps the files refused before they were planned, a name that is not valid UTF-8 too', async () => {
  const { input: inbox, out } = promptFolder({ 'ok.txt': 'a red fox' });
  writeFileSync(join(inbox, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  writeFileSync(join(inbox, 'junk.png'), 'not an image at all'); // refused at plan: wrong type
  writeFileSync(join(inbox, 'bad.txt'), Buffer.from([0xff, 0xfe, 0x41])); // refused at plan: unknown type
  const SHOWN = "caf$'\\xe9'.png"; // how such a name prints
  const cafe = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x70, 0x6e, 0x67]); // caf\xe9.png (Latin-1)
  writeFileSync(beside(inbox, Buffer.concat([Buffer.from('in/'), cafe])), 'x');
  const filed = ['processed/ok.txt', 'failed/junk.png', 'failed/bad.txt'];
  expect(await session(inbox, out, [...filed, Buffer.concat([Buffer.from('failed/'), cafe])])).toBe(0);
  const first = statuses(report(out));
  expect(first).toEqual({
    'bad.txt': 'failed',
    [SHOWN]: 'failed',
    'junk.png': 'failed',
    'ok.txt': 'succeeded',
  });

  writeFileSync(join(inbox, 'c.txt'), 'a small cat');
  expect(await session(inbox, out, ['processed/c.txt'])).toBe(0);
  const r = report(out);
  expect(statuses(r)).toEqual({ ...first, 'c.txt': 'succeeded' });
  expect(r.totals).toMatchObject({ inputs: 5, succeeded: 2, failed: 3 });
  const byInput = Object.fromEntries(r.items.map((i: { input: string }) => [i.input, i]));
  expect(byInput['junk.png'].reason).toMatch(/^wrong type: /);
  expect(byInput['bad.txt'].reason).toMatch(/^unknown type: /);
  expect(byInput[SHOWN]).toMatchObject({
    place: '.not-utf8/caf%E9.png',
    reason: `file name is not valid UTF-8: ${SHOWN}; rename it`,
    journal: 'finished in an earlier session; not taken again in this one',
  });

  // status counts them, by the name they print as, and knows they left the inbox.
  const status = jsonOut(await runCli(['status', out, '--json'], cliEnv(emu)));
  expect(status.by_kind).toEqual({ done: 2, failed_moved_away: 3 });
  expect(status.failures.map((f: { input: string }) => f.input).sort()).toEqual([
    'bad.txt',
    SHOWN,
    'junk.png',
  ]);
}, 120_000);
