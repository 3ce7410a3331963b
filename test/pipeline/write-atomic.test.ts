import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/pipeline/report/write-atomic.ts';

const dirs: string[] = [];
function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), 'genpipe-atomic-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('writeFileAtomic of one text', () => {
  it('writes into a folder that exists, leaving no scratch file', async () => {
    const dir = scratch();
    writeFileSync(join(dir, 'result.json'), 'old');
    await writeFileAtomic(join(dir, 'result.json'), '{"new":true}');
    expect(readFileSync(join(dir, 'result.json'), 'utf8')).toBe('{"new":true}');
    expect(readdirSync(dir)).toEqual(['result.json']);
  });

  it('makes the folders a file is written into when they are missing', async () => {
    const dir = scratch();
    const path = join(dir, 'a', 'b.png', 'result.json');
    await writeFileAtomic(path, 'text');
    expect(readFileSync(path, 'utf8')).toBe('text');
    expect(readdirSync(join(dir, 'a', 'b.png'))).toEqual(['result.json']);
  });

  it('says which file could not be written when a file stands where its folder would be', async () => {
    const dir = scratch();
    writeFileSync(join(dir, 'a'), 'a file, not a folder');
    await expect(writeFileAtomic(join(dir, 'a', 'result.json'), 'text')).rejects.toThrow(/result\.json/);
    expect(readdirSync(dir)).toEqual(['a']);
  });
});
