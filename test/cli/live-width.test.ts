/**
 * The live display's width as a user meets it: genpipe run on a pseudo-terminal made by `script`, whose
 * size is 0 x 0 when `script` itself does not run on a terminal (as in CI, or under a pipe). The width
 * is the terminal's columns when it tells some, else COLUMNS, else 80 — never the 20-column floor.
 */
import { spawn, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { BIN, cliEnv } from './run-cli.ts';

const hasScript = spawnSync('script', ['--version']).status === 0;

let emu: RunningEmulator;
const folder = usePromptFolders();

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(() => emu?.close());

/** `genpipe run` on a 0 x 0 pseudo-terminal: the lines it drew, escape sequences taken out. */
function runOnPty(args: string[], env: NodeJS.ProcessEnv): Promise<string[]> {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`exit ${code}:\n${out}`));
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's escape sequences
      else resolve(out.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '').split(/\r?\n|\r/));
    });
  });
}

describe.skipIf(!hasScript)('the live display on a terminal that tells no width', () => {
  it('is 80 columns wide without COLUMNS', async () => {
    const { input, out } = folder({ 'a.txt': 'a red fox', 'b.txt': 'a blue bird' });
    const env = cliEnv(emu);
    delete env.COLUMNS;
    const lines = await runOnPty(['run', input, '--out', out], env);
    const stages = lines.filter((l) => l.startsWith('stages'));
    expect(stages.length, lines.join('\n')).toBeGreaterThan(0);
    expect(stages.at(-1)).toMatch(/^stages {3}sniff \d+ {2}plan \d+ {2}check \d+/);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(79);
  });

  it('takes COLUMNS: 120 columns draw the bar', async () => {
    const { input, out } = folder({ 'a.txt': 'a red fox', 'b.txt': 'a blue bird' });
    const lines = await runOnPty(['run', input, '--out', out], cliEnv(emu, { COLUMNS: '120' }));
    const head = lines.filter((l) => l.startsWith('genpipe ') && !l.startsWith('genpipe: '));
    expect(head.length, lines.join('\n')).toBeGreaterThan(0);
    expect(head.at(-1)).toMatch(/[█░]{30}/);
  });
});
