import { existsSync } from 'node:fs';
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import type { CheckedVersion } from '../../src/pipeline/input-changed.ts';
import { moveNoClobber, onDoneDirs, settleInput } from '../../src/pipeline/watch/index.ts';
import { ON_DONE_TEXTS, suffixedName } from '../../src/pipeline/watch/on-done.ts';
import { until } from '../helpers/emulator.ts';
import { tempDir } from '../media/fixtures.ts';
import { useChildRunBed } from './child-run.ts';
import { envFor, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';
import { bufferHash, noisePng } from './watch-helpers.ts';

let base: string;
let remove: () => Promise<void>;
let n = 0;

beforeAll(async () => {
  ({ dir: base, remove } = await tempDir('genpipe-on-done-'));
  base = await realpath(base);
});
afterAll(() => remove());

async function inboxWith(files: Record<string, string>): Promise<string> {
  const inbox = join(base, `case-${++n}`, 'inbox');
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(join(inbox, rel, '..'), { recursive: true });
    await writeFile(join(inbox, rel), content);
  }
  return inbox;
}

describe('--on-done', () => {
  it('keep leaves inputs where they are; move files them beside the inbox, mirroring their paths', async () => {
    const inbox = await inboxWith({ 'trip/a.jpg': 'A', 'b.png': 'B', 'notes.md': 'N', 'k.jpg': 'K' });
    const dirs = onDoneDirs(inbox);
    expect(dirs).toEqual({ processed: join(inbox, '..', 'processed'), failed: join(inbox, '..', 'failed') });

    expect(
      await settleInput({ mode: 'keep', inboxDir: inbox, input: 'k.jpg', outcome: 'succeeded' }),
    ).toEqual({
      movedTo: null,
      copied: false,
    });
    expect(
      await settleInput({ mode: 'move', inboxDir: inbox, input: 'notes.md', outcome: 'skipped' }),
    ).toEqual({
      movedTo: null,
      copied: false,
    });
    const a = await settleInput({ mode: 'move', inboxDir: inbox, input: 'trip/a.jpg', outcome: 'succeeded' });
    const b = await settleInput({ mode: 'move', inboxDir: inbox, input: 'b.png', outcome: 'failed' });
    expect(a).toEqual({ movedTo: join(dirs.processed, 'trip', 'a.jpg'), copied: false });
    expect(b).toEqual({ movedTo: join(dirs.failed, 'b.png'), copied: false });
    expect(await readFile(a.movedTo!, 'utf8')).toBe('A');
    expect(await readFile(b.movedTo!, 'utf8')).toBe('B');
    expect((await readdir(inbox, { recursive: true })).sort()).toEqual(['k.jpg', 'notes.md', 'trip']);
  });

  it('never overwrites: a taken name gets a suffix, and the file already there is untouched', async () => {
    const inbox = await inboxWith({ 'a.jpg': 'second', README: 'r2' });
    const { processed } = onDoneDirs(inbox);
    await mkdir(processed, { recursive: true });
    await writeFile(join(processed, 'a.jpg'), 'first');
    await writeFile(join(processed, 'a-1.jpg'), 'also taken');
    await writeFile(join(processed, 'README'), 'r1');
    const a = await settleInput({ mode: 'move', inboxDir: inbox, input: 'a.jpg', outcome: 'succeeded' });
    const r = await settleInput({ mode: 'move', inboxDir: inbox, input: 'README', outcome: 'succeeded' });
    expect(a.movedTo).toBe(join(processed, 'a-2.jpg'));
    expect(r.movedTo).toBe(join(processed, 'README-1'));
    expect(await readFile(join(processed, 'a.jpg'), 'utf8')).toBe('first');
    expect(await readFile(join(processed, 'a-1.jpg'), 'utf8')).toBe('also taken');
    expect(await readFile(join(processed, 'a-2.jpg'), 'utf8')).toBe('second');
    expect(await readFile(join(processed, 'README'), 'utf8')).toBe('r1');
    expect(existsSync(join(inbox, 'a.jpg'))).toBe(false);
    expect(suffixedName('x/archive.tar.gz', 3)).toBe('x/archive.tar-3.gz');
  });

  it('moves only the version whose result was recorded: a touched one goes, a rewritten one stays', async () => {
    const inbox = await inboxWith({ 'same.txt': 'one', 'touched.txt': 'two', 'new.txt': 'three' });
    const { processed } = onDoneDirs(inbox);
    const versions = new Map<string, CheckedVersion>();
    for (const name of ['same.txt', 'touched.txt', 'new.txt']) {
      const st = await stat(join(inbox, name));
      const contentHash = bufferHash(await readFile(join(inbox, name)));
      versions.set(name, { size: st.size, mtimeMs: st.mtimeMs, contentHash });
    }
    await utimes(join(inbox, 'touched.txt'), new Date(), new Date(Date.now() + 60_000));
    await writeFile(join(inbox, 'new.txt'), 'three, rewritten');
    const settle = (input: string, version: CheckedVersion) =>
      settleInput({ mode: 'move', inboxDir: inbox, input, outcome: 'succeeded', version });

    expect(await settle('same.txt', versions.get('same.txt')!)).toEqual({
      movedTo: join(processed, 'same.txt'),
      copied: false,
    });
    expect(await settle('touched.txt', versions.get('touched.txt')!)).toEqual({
      movedTo: join(processed, 'touched.txt'),
      copied: false,
    });
    expect(await settle('new.txt', versions.get('new.txt')!)).toEqual({
      movedTo: null,
      copied: false,
      changed: true,
    });
    // Without a content hash, another size or mtime is another version.
    const { contentHash: _, ...bare } = versions.get('new.txt')!;
    expect((await settle('new.txt', bare)).changed).toBe(true);
    expect(await readFile(join(inbox, 'new.txt'), 'utf8')).toBe('three, rewritten');
    expect((await readdir(processed)).sort()).toEqual(['same.txt', 'touched.txt']);
  });

  it('moves across filesystems by copy, fsync and unlink, without clobbering or leftovers', async () => {
    // /dev/shm is a tmpfs, the temp dir is not: a rename between them fails with EXDEV.
    const shm = await mkdtemp('/dev/shm/genpipe-on-done-');
    try {
      const { dev: shmDev } = await stat(shm);
      expect(shmDev).not.toBe((await stat(base)).dev);
      const payload = Buffer.alloc(256 * 1024, 7);
      await writeFile(join(shm, 'big.bin'), payload);
      await writeFile(join(shm, 'big2.bin'), 'clash');
      const dstDir = join(base, 'across');
      await mkdir(dstDir);
      const first = await moveNoClobber(join(shm, 'big.bin'), join(dstDir, 'big.bin'));
      expect(first).toEqual({ to: join(dstDir, 'big.bin'), copied: true });
      expect((await readFile(first.to)).equals(payload)).toBe(true);
      expect(existsSync(join(shm, 'big.bin'))).toBe(false);
      const second = await moveNoClobber(join(shm, 'big2.bin'), join(dstDir, 'big.bin'));
      expect(second).toEqual({ to: join(dstDir, 'big-1.bin'), copied: true });
      expect((await readFile(join(dstDir, 'big.bin'))).equals(payload)).toBe(true);
      expect(await readFile(second.to, 'utf8')).toBe('clash');
      expect((await readdir(dstDir)).sort()).toEqual(['big-1.bin', 'big.bin']); // no hidden temp copy left
    } finally {
      await rm(shm, { recursive: true, force: true });
    }
  });
});

const SIDECAR_KEY = 'svc-api-on-done-sidecar';
let emu: RunningEmulator;
let bedRoot: string;
useChildRunBed(
  {
    name: 'on-done-sidecar',
    clients: ['sidecar'],
    keyOf: () => SIDECAR_KEY,
    config: { queue_ms: 20, processing_ms: { image: 100, video: 200 } },
  },
  (bed) => ({ emu, root: bedRoot } = bed),
);

/** A rule claiming every other file (a .json left alone in the inbox included). */
const CLAIM_ALL_RECIPE = `rules:
  - match: "**/*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
  - match: "**/*"
    input_as: prompt
    request: { type: image, model: uni-1 }
`;

/** Every file under `dir`, relative, sorted ([] when it is gone). */
const filesUnder = async (dir: string) =>
  existsSync(dir)
    ? (await readdir(dir, { recursive: true, withFileTypes: true }))
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
        .sort()
    : [];

describe('genpipe watch --on-done move with sidecars', () => {
  it('moves each sidecar beside its input, to processed/ or failed/, and files one an interrupted move left', async () => {
    const base = join(bedRoot, 'sidecars');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', CLAIM_ALL_RECIPE);
    await writeFile(join(inbox, 'early.png'), await noisePng(48, 48));
    await put(inbox, 'early.png.json', '{ "prompt": "ink" }');
    const args = ['watch', inbox, '--out', out, '--json', '--on-done', 'move', '--delete-empty-src-dirs'];
    const timing = ['--quiet-ms', '300', '--rescan-ms', '400', '--poll-interval', '1'];
    const watch = () => spawnGenpipe([...args, ...timing], envFor(emu.url, SIDECAR_KEY));
    const child = watch();
    await until(async () => child.stderr().includes('watching'), 15_000);
    // A folder of inputs with their sidecars arrives at once (renamed in).
    const trip = join(base, 'scratch', 'trip');
    await put(trip, 'side.png.json', '{ "prompt": "charcoal" }');
    await put(trip, 'bad.png.json', '{ "prompt": null }');
    await writeFile(join(trip, 'side.png'), await noisePng(64, 64));
    await writeFile(join(trip, 'bad.png'), await noisePng(40, 40));
    await rename(trip, join(inbox, 'trip'));
    const processed = join(base, 'processed');
    const failed = join(base, 'failed');
    await until(
      async () =>
        // Each sidecar is moved after its input: wait for both (a loaded machine may look between).
        (await filesUnder(processed)).includes(join('trip', 'side.png.json')) &&
        (await filesUnder(failed)).includes(join('trip', 'bad.png.json')),
      30_000,
    ).catch(async (err) => {
      throw new Error(
        `${err}: ${child.stderr()} ${(await filesUnder(base)).join(' ')} ${JSON.stringify(child.events.filter((e) => e.state === 'failed'))}`,
      );
    });
    await child.until(
      (events) => events.filter((e) => e.state === 'reported' || e.state === 'failed').length >= 3,
      'three files final',
    );
    // Each sidecar went with its input; the inbox holds the recipe alone, its emptied folder removed.
    expect(await filesUnder(processed)).toEqual([
      'early.png',
      'early.png.json',
      'trip/side.png',
      'trip/side.png.json',
    ]);
    expect(await filesUnder(failed)).toEqual(['trip/bad.png', 'trip/bad.png.json']);
    // The emptied folder is removed once its last file was moved (a loaded machine may look between).
    await until(async () => (await readdir(inbox)).length === 1, 15_000).catch(() => undefined);
    expect(await readdir(inbox)).toEqual(['genpipe.yaml']);
    child.proc.kill('SIGINT');
    expect((await child.exited).code, child.stderr()).toBe(0);
    const report = await readJson(join(out, 'report.json'));
    expect(
      Object.fromEntries(report.items.map((i: { input: string; status: string }) => [i.input, i.status])),
    ).toEqual({ 'early.png': 'succeeded', 'trip/side.png': 'succeeded', 'trip/bad.png': 'failed' });
    expect(report.totals).toMatchObject({ succeeded: 2, failed: 1 });

    // A crash between the input's move and its sidecar's: the sidecar is back in the inbox, alone.
    await rename(join(processed, 'early.png.json'), join(inbox, 'early.png.json'));
    const again = watch();
    await until(async () => again.stderr().includes('watching'), 15_000);
    expect(again.stderr()).toContain(ON_DONE_TEXTS.sidecarFiled(join(processed, 'early.png.json')));
    expect(await readdir(inbox)).toEqual(['genpipe.yaml']);
    // A new early.png later is its own file: no stale sidecar applies to it (the rule's prompt).
    await writeFile(join(inbox, 'early.png'), await noisePng(56, 56));
    await until(async () => (await filesUnder(processed)).includes('early-1.png'), 30_000);
    again.proc.kill('SIGINT');
    expect((await again.exited).code, again.stderr()).toBe(0);
    expect(await filesUnder(processed)).toEqual([
      'early-1.png',
      'early.png',
      'early.png.json',
      'trip/side.png',
      'trip/side.png.json',
    ]);
    expect(again.events.filter((e) => e.input?.endsWith('.json'))).toEqual([]);
    const early = await readJson(join(out, 'early-1.png', 'result.json'));
    expect(JSON.stringify(early)).toMatch(/\bwatercolor\b/);
    expect(JSON.stringify(early)).not.toMatch(/\bink\b/);
  }, 120_000);
});
