import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function folder(): { input: string; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-status-'));
  dirs.push(dir);
  const input = join(dir, 'in');
  mkdirSync(input);
  writeFileSync(
    join(input, 'genpipe.yaml'),
    'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n',
  );
  for (const n of ['a', 'b', 'c']) writeFileSync(join(input, `${n}.txt`), `a small ${n} fox`);
  return { input, out: join(dir, 'out') };
}

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
