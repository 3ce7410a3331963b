import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '../../scripts/check-function-length.mjs');
const run = promisify(execFile);

/** A function of `lines` lines (its first and last line included). */
function fn(name: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
  return `export function ${name}() {\n${body}\n}\n`;
}

async function check(dir: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [script, dir], { cwd: dir });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout };
  }
}

describe('scripts/check-function-length.mjs', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnlen-'));
    await mkdir(join(dir, 'sub'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('passes functions of up to 120 lines', async () => {
    await writeFile(join(dir, 'sub/a.ts'), fn('fits', 120));
    const { code, out } = await check(dir);
    expect(code).toBe(0);
    expect(out).not.toContain('FAIL');
  });

  it('fails a function of 121 lines, naming file, line, name and length', async () => {
    await writeFile(join(dir, 'sub/a.ts'), `// a file\n\n${fn('tooLong', 121)}`);
    const { code, out } = await check(dir);
    expect(code).toBe(1);
    expect(out).toContain('FAIL sub/a.ts:3 tooLong 121 lines');
  });

  it('accepts a long function whose line or doc comment above gives a reason', async () => {
    await writeFile(
      join(dir, 'a.ts'),
      [
        `// long-function: a table of cases reads best in one place\n${fn('lineComment', 130)}`,
        `/**\n * Does things.\n * long-function: one state machine\n */\n${fn('inDoc', 130)}`,
        `// long-function: kept whole\n/** Does things. */\n${fn('aboveDoc', 130)}`,
        `// long-function: the arrow is known by its statement\nexport const arrow = () => {\n${fn('inner', 20)}${'\n'.repeat(120)}};\n`,
      ].join('\n'),
    );
    const { code, out } = await check(dir);
    expect(out).not.toContain('FAIL');
    expect(code).toBe(0);
    expect(out).toContain('lineComment 130 lines (long-function: a table of cases reads best in one place)');
    expect(out).toContain('inDoc 130 lines (long-function: one state machine)');
    expect(out).toContain('aboveDoc 130 lines (long-function: kept whole)');
    expect(out).toContain('arrow');
  });

  it('fails a marker without a reason, or one that is not just above the function', async () => {
    await writeFile(
      join(dir, 'a.ts'),
      [
        `// long-function:\n${fn('noReason', 130)}`,
        `// long-function: too far away\n\n${fn('detached', 130)}`,
        `// long-function: outer only\nexport function outer() {\n  ${fn('nested', 125).replace('export ', '')}}\n`,
      ].join('\n'),
    );
    const { code, out } = await check(dir);
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL a\.ts:2 noReason 130 lines .*no reason/);
    expect(out).toMatch(/FAIL a\.ts:\d+ detached 130 lines/);
    expect(out).toMatch(/ok {3}a\.ts:\d+ outer 127 lines/);
    expect(out).toMatch(/FAIL a\.ts:\d+ nested 125 lines/);
  });
});
