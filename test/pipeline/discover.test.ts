import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover, isTempName, SKIP_REASONS } from '../../src/pipeline/discover.ts';
import type { Item } from '../../src/pipeline/item.ts';
import { tempDir } from '../media/fixtures.ts';
import { put } from './stage-helpers.ts';

let base: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  ({ dir: base, remove } = await tempDir('genpipe-discover-'));
  base = await realpath(base);
});
afterAll(() => remove());

async function collect(
  inputDir: string,
  opts: Parameters<typeof discover>[1] = {},
): Promise<{ items: Item[]; skipped: Record<string, string> }> {
  const skipped: Record<string, string> = {};
  const items: Item[] = [];
  for await (const item of discover(inputDir, { ...opts, onSkip: (input, why) => (skipped[input] = why) })) {
    items.push(item);
  }
  return { items, skipped };
}

describe('discover', () => {
  it('yields input files in a stable sorted order and skips everything that is not an input', async () => {
    const input = join(base, 'in');
    const outside = join(base, 'outside.jpg');
    await writeFile(outside, 'outside');
    for (const rel of [
      'a.jpg',
      'b/c.png',
      'b/c.png.json',
      'b/orphan.json',
      'b/A.png',
      '.hidden.jpg',
      '.git/x.jpg',
      'd.part',
      'e.TMP',
      'f.crdownload',
      '~$doc.docx',
      'g.swp',
      'h.txt~',
      'genpipe.yaml',
      'sub/genpipe.yaml',
      'sub/deep/z.jpg',
      'my-recipe.yaml',
      'refs/style.png',
      'out/old.jpg',
    ]) {
      await put(input, rel, rel);
    }
    await symlink(outside, join(input, 'link-out.jpg'));
    await symlink(join(input, 'a.jpg'), join(input, 'link-in.jpg'));
    await symlink(join(input, 'b'), join(input, 'link-dir'));
    await symlink(join(input, 'missing.jpg'), join(input, 'broken.jpg'));
    await symlink(base, join(input, 'sub', 'loop'));
    execFileSync('mkfifo', [join(input, 'pipe.jpg')]);

    const { items, skipped } = await collect(input, {
      outDir: join(input, 'out'),
      skipFiles: [join(input, 'my-recipe.yaml'), join(input, 'refs', 'style.png')],
    });
    expect(items.map((i) => i.input)).toEqual([
      'a.jpg',
      'b/A.png',
      'b/c.png',
      'b/orphan.json',
      'link-in.jpg',
      'sub/deep/z.jpg',
    ]);
    const linkIn = items.find((i) => i.input === 'link-in.jpg')!;
    expect(linkIn.absPath).toBe(join(input, 'a.jpg'));
    const c = items.find((i) => i.input === 'b/c.png')!;
    expect(c).toMatchObject({
      absPath: join(input, 'b', 'c.png'),
      size: 'b/c.png'.length,
      state: 'discovered',
    });
    expect(skipped).toEqual({
      '.git': SKIP_REASONS.hidden,
      '.hidden.jpg': SKIP_REASONS.hidden,
      'b/c.png.json': SKIP_REASONS.sidecar,
      'broken.jpg': SKIP_REASONS.symlinkBroken,
      'd.part': SKIP_REASONS.temporary,
      'e.TMP': SKIP_REASONS.temporary,
      'f.crdownload': SKIP_REASONS.temporary,
      'g.swp': SKIP_REASONS.temporary,
      'genpipe.yaml': SKIP_REASONS.recipe,
      'h.txt~': SKIP_REASONS.temporary,
      'link-dir': SKIP_REASONS.symlinkDir,
      'link-out.jpg': SKIP_REASONS.symlinkOut,
      'my-recipe.yaml': SKIP_REASONS.recipeFile,
      out: SKIP_REASONS.outDir,
      'pipe.jpg': SKIP_REASONS.special,
      'refs/style.png': SKIP_REASONS.recipeFile,
      'sub/genpipe.yaml': SKIP_REASONS.recipe,
      'sub/loop': SKIP_REASONS.symlinkOut,
      '~$doc.docx': SKIP_REASONS.temporary,
    });
  });

  it('knows temporary names whatever their case', () => {
    expect(['x.part', 'x.PART', 'x.tmp', 'x.crdownload', '~$x.docx', 'x.swp', 'x~'].every(isTempName)).toBe(
      true,
    );
    expect(['x.jpg', 'part', 'x.tmpl', 'x~y'].some(isTempName)).toBe(false);
  });

  it('refuses an input dir that is not a folder, and an out dir equal to the input dir', async () => {
    const file = await put(base, 'plain.txt', 'x');
    await expect(collect(file)).rejects.toThrow('is not a folder');
    await expect(collect(join(base, 'nope'))).rejects.toThrow('is not a folder');
    await expect(collect(join(base, 'in'), { outDir: join(base, 'in', '.', '') })).rejects.toThrow(
      'the out dir cannot be the input dir',
    );
  });

  it('stops when the signal aborts', async () => {
    const ac = new AbortController();
    const seen: string[] = [];
    const run = async () => {
      for await (const item of discover(join(base, 'in'), { signal: ac.signal })) {
        seen.push(item.input);
        ac.abort(new Error('stop'));
      }
    };
    await expect(run()).rejects.toThrow('stop');
    expect(seen).toEqual(['a.jpg']);
  });

  it('does not walk into a folder an --exclude leaves out entirely', async () => {
    const input = join(base, 'excluded-folder');
    await put(input, 'a.jpg', 'a');
    await put(join(input, 'raw'), 'b.jpg', 'b');
    await put(join(input, 'keep', 'raw'), 'c.jpg', 'c');
    await put(join(input, 'raw-too'), 'd.jpg', 'd');
    // Below raw/, a tree deeper than a path may be long: reading it fails whoever runs the walk (root
    // too), so a walk that went in would throw ENAMETOOLONG.
    const segment = 'd'.repeat(60);
    execFileSync('sh', [
      '-c',
      `cd "$0" && for i in $(seq 1 80); do mkdir ${segment} && cd -P ${segment}; done`,
      join(input, 'raw'),
    ]);
    try {
      const { items, skipped } = await collect(input, { select: { exclude: ['raw/**', '**/raw/**'] } });
      expect(items.map((i) => i.input)).toEqual(['a.jpg', 'raw-too/d.jpg']);
      expect(skipped).toEqual({
        'keep/raw': "excluded by --exclude '**/raw/**' (the whole folder, not looked into)",
        raw: "excluded by --exclude 'raw/**' (the whole folder, not looked into)",
      });
      // An exclude that leaves some of a folder's files in is matched file by file, as before.
      const some = await collect(join(input, 'keep'), { select: { exclude: ['raw/*.png'] } });
      expect(some.items.map((i) => i.input)).toEqual(['raw/c.jpg']);
    } finally {
      // fs.rm walks by full paths, too long here; rm -rf does not.
      execFileSync('rm', ['-rf', join(input, 'raw')]);
    }
  });

  it('walks 10,000 files quickly with a bounded number of open handles', { timeout: 60_000 }, async () => {
    const input = join(base, 'many');
    for (let d = 0; d < 100; d++) {
      const sub = join(input, `d${String(d).padStart(3, '0')}`);
      await mkdir(sub, { recursive: true });
      await Promise.all(
        Array.from({ length: 100 }, (_, f) => writeFile(join(sub, `f${String(f).padStart(3, '0')}.txt`), '')),
      );
    }
    const fds = () => readdirSync('/proc/self/fd').length;
    const before = fds();
    let most = before;
    let count = 0;
    let last = '';
    let sorted = true;
    const started = performance.now();
    for await (const item of discover(input)) {
      if (item.input <= last) sorted = false;
      last = item.input;
      if (++count % 250 === 0) most = Math.max(most, fds());
    }
    const ms = performance.now() - started;
    expect(count).toBe(10_000);
    expect(sorted).toBe(true);
    expect(last).toBe('d099/f099.txt');
    expect(most - before).toBeLessThanOrEqual(3);
    expect(ms).toBeLessThan(15_000);
  });
});
