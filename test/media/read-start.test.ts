import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readStart } from '../../src/media/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'genpipe-read-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function text(start: Awaited<ReturnType<typeof readStart>>): string {
  if (!start.isFile) throw new Error('not a file');
  return start.bytes.toString('utf8');
}

describe('readStart of a small file read before', () => {
  it('hands out the bytes it holds only while the file is the same version', async () => {
    const path = join(dir, 'prompt.txt');
    writeFileSync(path, 'a red fox');
    utimesSync(path, 1_000_000, 1_000_000);
    expect(text(await readStart(path, 64 * 1024))).toBe('a red fox');
    expect(text(await readStart(path, 4))).toBe('a re');
    // The same size, and the mtime put back as it was (to the nanosecond): the ctime still says it was
    // written.
    writeFileSync(path, 'a tan cat');
    utimesSync(path, 1_000_000, 1_000_000);
    expect(statSync(path, { bigint: true }).mtimeNs).toBe(1_000_000_000_000_000n);
    expect(text(await readStart(path, 64 * 1024))).toBe('a tan cat');
    // Replaced by another file under the same name.
    writeFileSync(join(dir, 'other.txt'), 'a grey owl');
    rmSync(path);
    writeFileSync(path, 'a grey owl');
    expect(text(await readStart(path, 64 * 1024))).toBe('a grey owl');
  });

  it('reads a file that is gone, or no longer a file, as the file system says', async () => {
    const path = join(dir, 'gone.txt');
    writeFileSync(path, 'here');
    expect(text(await readStart(path, 100))).toBe('here');
    rmSync(path);
    await expect(readStart(path, 100)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('gives a larger file its first bytes and its size, as before', async () => {
    const path = join(dir, 'large.bin');
    writeFileSync(path, Buffer.alloc(200 * 1024, 7));
    const start = await readStart(path, 1000);
    expect(start).toMatchObject({ isFile: true, size: 200 * 1024 });
    expect(start.isFile && start.bytes.length).toBe(1000);
  });
});
