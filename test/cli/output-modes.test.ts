import { describe, expect, it } from 'vitest';
import { usePromptFolders } from './prompt-folder.ts';
import { runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
const folder = () =>
  promptFolder({
    'a.txt': 'a small a fox',
    'b.txt': 'a small b fox',
    'c.txt': 'a small c fox',
    'empty.txt': '',
  });

describe('run on a pipe', () => {
  it('prints one line per file outcome by default, and every stage with -v', async () => {
    const { input, out } = folder();
    const plain = await runCli(
      ['run', input, '--out', out, '--emulator', '--no-verbose-for-tests'],
      process.env,
      60_000,
    );
    expect(plain.code).toBe(1); // the empty file fails its check
    const lines = plain.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/ run: /);
    expect(lines.at(-1)).toMatch(/ finished: 4 inputs, 3 succeeded, 1 failed/);
    const files = lines.slice(1, -1);
    expect(files).toHaveLength(4);
    for (const n of ['a', 'b', 'c'])
      expect(files.filter((l) => l.includes(` ${n}.txt: succeeded`))).toHaveLength(1);
    expect(files.filter((l) => l.includes(' empty.txt: failed'))).toHaveLength(1);
    expect(plain.stdout).not.toContain('submitted');

    const verbose = await runCli(
      ['run', input, '--out', `${out}-v`, '--emulator', '-v'],
      process.env,
      60_000,
    );
    expect(verbose.stdout).toContain('a.txt: submitted');
    expect(verbose.stdout).toContain('a.txt: discovered');
  }, 120_000);
});
