/**
 * Inputs named like the batch's own files at the top of the out dir — a client's `report.json`, an
 * earlier export's `report.html`, a folder `report.json/` — get another place (`report-1.json`), as a
 * second version of a name does: the reports are written, the inputs are processed and reported like
 * any other file. `genpipe run` as a child process against the emulator.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
const emu = useTestEmulator();

const EVERY_FILE_A_PROMPT =
  'rules:\n  - match: "**/*"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';

it('an input named report.json or report.html is placed beside the reports, never on them', async () => {
  const { input, out } = promptFolder({
    'report.json': 'a client note: a red fox',
    'report.html': 'an earlier export: a small cat',
    'a.txt': 'a blue bird',
  });
  writeFileSync(join(input, 'genpipe.yaml'), EVERY_FILE_A_PROMPT);
  const run = await runCli(['run', input, '--out', out, '--poll-interval', '1'], cliEnv(emu()), 60_000);
  expect(run.code, run.stderr + run.stdout).toBe(0);
  expect(run.stderr).not.toContain('EISDIR');
  expect(statSync(join(out, 'report.json')).isFile()).toBe(true);
  expect(statSync(join(out, 'report.html')).isFile()).toBe(true);
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  const placed = Object.fromEntries(
    report.items.map((i: { input: string; place: string; status: string }) => [i.input, [i.place, i.status]]),
  );
  expect(placed).toEqual({
    'a.txt': ['a.txt', 'succeeded'],
    'report.html': ['report-1.html', 'succeeded'],
    'report.json': ['report-1.json', 'succeeded'],
  });
  expect(existsSync(join(out, 'report-1.json', 'output-0.png'))).toBe(true);
  expect(existsSync(join(out, 'report-1.html', 'result.json'))).toBe(true);

  // A re-run finds them done where they are, and pays for nothing again.
  const again = await runCli(['run', input, '--out', out, '--poll-interval', '1'], cliEnv(emu()), 60_000);
  expect(again.code, again.stderr + again.stdout).toBe(0);
  expect(again.stdout).toContain('already done in an earlier run');
}, 120_000);
