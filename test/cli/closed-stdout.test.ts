import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { usePromptFolders } from './prompt-folder.ts';
import { BIN } from './run-cli.ts';

const promptFolder = usePromptFolders();

describe('a reader of stdout that goes away', () => {
  it('ends the display, not the batch: `genpipe run … | head -1` still finishes and writes its reports', async () => {
    const { input, out } = promptFolder(
      Object.fromEntries([0, 1, 2, 3].map((i) => [`p${i}.txt`, `a small fox number ${i}`])),
    );
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
