import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN } from './run-cli.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('a reader of stdout that goes away', () => {
  it('ends the display, not the batch: `genpipe run … | head -1` still finishes and writes its reports', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-closed-stdout-'));
    dirs.push(dir);
    const input = join(dir, 'in');
    mkdirSync(input);
    writeFileSync(
      join(input, 'genpipe.yaml'),
      'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n',
    );
    for (let i = 0; i < 4; i++) writeFileSync(join(input, `p${i}.txt`), `a small fox number ${i}`);
    const out = join(dir, 'out');
    const child = spawn(process.execPath, [BIN, 'run', input, '--out', out, '--emulator'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    // Like `head -1`: read the first line, then close the pipe; later writes meet EPIPE.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    expect(stderr).not.toContain('EPIPE');
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as {
      totals: { succeeded: number };
    };
    expect(report.totals.succeeded).toBe(4);
    expect(existsSync(join(out, 'report.html'))).toBe(true);
  }, 60_000);
});
