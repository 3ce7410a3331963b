import { describe, expect, it } from 'vitest';
import { usePromptFolders } from './prompt-folder.ts';
import { runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
const folder = () =>
  promptFolder({ 'a.txt': 'a small a fox', 'b.txt': 'a small b fox', 'c.txt': 'a small c fox' });

describe('genpipe status <out-dir>', () => {
  it('says what the journal holds and what a re-run would do, without running anything', async () => {
    const { input, out } = folder();
    const run = await runCli(['run', input, '--out', out, '--emulator', '-q'], process.env, 60_000);
    expect(run.code).toBe(0);
    const status = await runCli(['status', out], process.env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/last batch: #1 of 1, finished/);
    expect(status.stdout).toContain('inputs in the journal: 3');
    expect(status.stdout).toMatch(/^ +3 done$/m);
    expect(status.stdout).toContain('done (3): skips them (already done)');
    const json = await runCli(['status', out, '--json'], process.env);
    const summary = JSON.parse(json.stdout) as { inputs: number; byKind: Record<string, number> };
    expect(summary.inputs).toBe(3);
    expect(summary.byKind.done).toBe(3);
  }, 90_000);

  it('refuses an out dir without a journal, with exit 2 and how to point at one', async () => {
    const { out } = folder();
    const status = await runCli(['status', out], process.env);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('no journal at');
    expect(status.stderr).toContain('--journal <path>');
  });
});
