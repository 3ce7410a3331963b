/**
 * Files whose names cannot be a folder's name as they are — a `\` in the name, a name that a suffix
 * (`-1`) would make longer than 255 bytes — get an out folder all the same (`\` written `%5C`, a long
 * name cut before its suffix and extension): their outputs land, are named in result.json and
 * report.json, and a re-run pays for nothing twice. A download that fails for a local reason keeps
 * the generation, which the next run collects. `genpipe run` and `genpipe watch` as child processes.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, heldGenerations, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { cleanEnv } from '../pipeline/run-fixtures.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu?.close();
});

/** Generations the emulator made so far. */
async function generations(): Promise<number> {
  return (await adminRows(emu)).length;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read reports loosely
function readJson(path: string): any {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** Runs `genpipe run input --out out` against the test's emulator. */
function run(input: string, out: string) {
  return runCli(['run', input, '--out', out, '--poll-interval', '1'], cliEnv(emu), 60_000);
}

/** The file landed at `<out>/<place>/`, and result.json and report.json name that place. */
function expectPlaced(out: string, input: string, place: string): void {
  expect(existsSync(join(out, place, 'output-0.png')), `${place}/output-0.png`).toBe(true);
  const result = readJson(join(out, place, 'result.json'));
  expect({ input: result.input, place: result.place, state: result.state }).toEqual({
    input,
    place,
    state: 'completed',
  });
  const item = readJson(join(out, 'report.json')).items.find((i: { input: string }) => i.input === input);
  expect({ place: item?.place, status: item?.status }).toEqual({ place, status: 'succeeded' });
}

const BACKSLASHED = 'we\\x1b[31mird.txt'; // a backslash in the name, as `touch 'we\x1b[31mird.txt'` makes
const BACKSLASHED_PLACE = 'we%5Cx1b[31mird.txt';

it('a file named with a backslash gets its outputs in a folder with %5C for it, paid once', async () => {
  const { input, out } = promptFolder({ [BACKSLASHED]: 'a red fox', 'plain.txt': 'a small cat' });
  const before = await generations();
  const first = await run(input, out);
  expect(first.code, first.stderr + first.stdout).toBe(0);
  expect(await generations()).toBe(before + 2);
  expectPlaced(out, BACKSLASHED, BACKSLASHED_PLACE);
  expectPlaced(out, 'plain.txt', 'plain.txt');

  const again = await run(input, out);
  expect(again.code, again.stderr + again.stdout).toBe(0);
  expect(again.stdout).toContain('already done in an earlier run');
  expect(await generations()).toBe(before + 2);
}, 120_000);

it('a long name whose next version needs a suffix is cut to 255 bytes before it, paid once', async () => {
  const ascii = `${'n'.repeat(251)}.txt`; // 255 bytes
  const accented = `${'é'.repeat(125)}.txt`; // 254 bytes: a cut never splits a character
  const { input, out } = promptFolder({ [ascii]: 'a blue bird', [accented]: 'a grey owl' });
  const before = await generations();
  const first = await run(input, out);
  expect(first.code, first.stderr + first.stdout).toBe(0);
  expectPlaced(out, ascii, ascii);
  expectPlaced(out, accented, accented);

  // New bytes: a new version, whose folder must not be the one holding the first version's outputs.
  writeFileSync(join(input, ascii), 'a green bird');
  writeFileSync(join(input, accented), 'a white owl');
  const second = await run(input, out);
  expect(second.code, second.stderr + second.stdout).toBe(0);
  expect(await generations()).toBe(before + 4);
  const asciiPlace = `${'n'.repeat(249)}-1.txt`;
  const accentedPlace = `${'é'.repeat(124)}-1.txt`;
  expect(Buffer.byteLength(asciiPlace)).toBe(255);
  expectPlaced(out, ascii, asciiPlace);
  expectPlaced(out, accented, accentedPlace);
  expect(existsSync(join(out, ascii, 'output-0.png'))).toBe(true); // the first version's, kept

  const third = await run(input, out);
  expect(third.code, third.stderr + third.stdout).toBe(0);
  expect(await generations()).toBe(before + 4);
}, 180_000);

it('a generation an earlier version left unplaced (its place the raw name) is collected, not paid again', async () => {
  const { input, out } = promptFolder({ [BACKSLASHED]: 'a red fox' });
  const first = await run(input, out);
  expect(first.code, first.stderr + first.stdout).toBe(0);
  const before = await generations();
  // What a run of an earlier genpipe left: the row's place its input path, its outputs never written.
  const db = new Database(join(out, '.genpipe', 'journal.db'));
  db.prepare("UPDATE items SET place = input, phase = 'submitted', outputs = NULL").run();
  db.close();
  rmSync(join(out, BACKSLASHED_PLACE), { recursive: true });

  const again = await run(input, out);
  expect(again.code, again.stderr + again.stdout).toBe(0);
  expect(await generations()).toBe(before);
  expectPlaced(out, BACKSLASHED, BACKSLASHED_PLACE);
}, 120_000);

it('a download that fails for a local reason keeps the generation: the next run collects it', async () => {
  const { input, out } = promptFolder({ 'blocked.txt': 'a blocked road' });
  const held = await hold(emu, { prompt: 'blocked road' });
  const before = await generations();
  const first = run(input, out);
  try {
    await heldGenerations(emu, 1);
    // The item's out folder cannot be made: a file has its name.
    writeFileSync(join(out, 'blocked.txt'), 'in the way');
  } finally {
    await unhold(emu, held);
  }
  const r = await first;
  expect(r.code, r.stderr + r.stdout).toBe(1);
  expect(r.stdout).toContain('blocked.txt: failed at download: the outputs could not be downloaded');
  expect(await generations()).toBe(before + 1);

  rmSync(join(out, 'blocked.txt'));
  const again = await run(input, out);
  expect(again.code, again.stderr + again.stdout).toBe(0);
  expect(await generations()).toBe(before + 1);
  expectPlaced(out, 'blocked.txt', 'blocked.txt');
}, 120_000);

it('genpipe watch places a file named with a backslash as run does', async () => {
  const { input: inbox, out } = promptFolder({});
  await put(inbox, BACKSLASHED, 'a red fox');
  const child = spawnGenpipe(
    ['watch', inbox, '--out', out, '--emulator', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
    cleanEnv(),
  );
  await child.until(
    (es) => es.some((e) => e.input === BACKSLASHED && (e.state === 'reported' || e.state === 'failed')),
    'the file reported or failed',
    60_000,
  );
  child.proc.kill('SIGTERM');
  expect((await child.exited).code, child.stderr()).toBe(0);
  expectPlaced(out, BACKSLASHED, BACKSLASHED_PLACE);
}, 90_000);
