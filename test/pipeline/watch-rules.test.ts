import { mkdir, readFile, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeVideo, runFfmpeg } from '../../src/media/index.ts';
import { nameSkipReason, SKIP_REASONS } from '../../src/pipeline/discover.ts';
import {
  checkComplete,
  containerVerdict,
  createReadyQueue,
  WATCH_TEXTS,
} from '../../src/pipeline/watch/index.ts';
import { createMountGuard } from '../../src/pipeline/watch/mount-guard.ts';
import { lookAtPath } from '../../src/pipeline/watch/path-hint.ts';
import { StabilityTracker } from '../../src/pipeline/watch/stability.ts';
import { claimedSizeBytes } from '../media/claimed-size.ts';
import { tempDir } from '../media/fixtures.ts';

describe('the stability tracker', () => {
  const opts = { quietMs: 100, giveUpMs: 1_000, forgetAfterMs: 5_000 };
  const sig = (size: number, mtimeMs = 1) => ({ size, mtimeMs });

  it('checks a file only after its size and mtime stayed unchanged for the quiet period', () => {
    const t = new StabilityTracker(opts);
    t.observe('a.png', '/in/a.png', sig(10), 0);
    expect(t.dueForCheck(99)).toEqual([]);
    t.observe('a.png', '/in/a.png', sig(20), 50); // still growing: the quiet period starts again
    expect(t.dueForCheck(149)).toEqual([]);
    t.observe('a.png', '/in/a.png', sig(20), 140); // unchanged: the period goes on
    expect(t.dueForCheck(150).map((f) => f.input)).toEqual(['a.png']);
    expect(t.nextDueAt()).toBe(150);
  });

  it('drops a verdict when the file changed during its check, and holds an incomplete one', () => {
    const t = new StabilityTracker(opts);
    const f = t.observe('a.png', '/in/a.png', sig(10), 0);
    let v = t.beginCheck(f);
    t.observe('a.png', '/in/a.png', sig(11), 120);
    expect(t.finishCheck(f, v, null)).toBe('stale');
    expect(f.state).toBe('pending');
    v = t.beginCheck(f);
    expect(t.finishCheck(f, v, 'image could not be decoded: file is truncated')).toBe('held');
    expect(t.counts()).toMatchObject({ held: 1, pending: 0 });
    expect(t.dueForGiveUp(120 + 999)).toEqual([]);
    expect(t.dueForGiveUp(120 + 1_000)).toEqual([f]);
    t.observe('a.png', '/in/a.png', sig(12), 1_200); // the copy went on after all
    expect(f).toMatchObject({ state: 'pending', heldReason: null, since: 1_200 });
  });

  it('compares mtimes to the millisecond (restored mtimes often lose the rest)', () => {
    const t = new StabilityTracker(opts);
    const f = t.observe('a.png', '/in/a.png', sig(10, 1_000.9207), 0);
    t.markHanded(f);
    t.observe('a.png', '/in/a.png', sig(10, 1_000.92), 10);
    expect(f.state).toBe('handed');
    t.observe('a.png', '/in/a.png', sig(10, 1_001), 20);
    expect(f.state).toBe('pending');
  });

  it('hands a file over again only after it changed', () => {
    const t = new StabilityTracker(opts);
    const f = t.observe('a.png', '/in/a.png', sig(10), 0);
    expect(t.finishCheck(f, t.beginCheck(f), null)).toBe('ready');
    t.markHanded(f);
    t.observe('a.png', '/in/a.png', sig(10), 500, 2);
    expect(t.dueForCheck(10_000)).toEqual([]);
    t.observe('a.png', '/in/a.png', sig(10, 2), 600, 3); // touched: mtime moved
    expect(t.dueForCheck(700)).toEqual([f]);
    expect(t.counts()).toMatchObject({ tracked: 1, pending: 1, handed: 0 });
  });

  it('sweeps: forgets unhanded files at once, remembers handed ones as missing for a while', () => {
    const t = new StabilityTracker(opts);
    const handed = t.observe('a.png', '/in/a.png', sig(10), 0, 1);
    t.markHanded(handed);
    t.observe('b.png', '/in/b.png', sig(10), 0, 1);
    t.observe('sub/c.png', '/in/sub/c.png', sig(10), 0, 1);
    t.observe('late.png', '/in/late.png', sig(10), 150); // seen by an event after scan 2 began
    // Scan 2 (started at 100) found nothing; sub/ could not be read.
    expect(t.sweep(2, 100, 200, (input) => input.startsWith('sub/'))).toBe(1);
    expect(t.get('b.png')).toBeUndefined();
    expect(t.get('sub/c.png')?.state).toBe('pending');
    expect(t.get('late.png')?.state).toBe('pending');
    expect(handed).toMatchObject({ state: 'missing', missingSince: 200 });
    // It comes back unchanged: handed again, not to be handed over a second time.
    t.observe('a.png', '/in/a.png', sig(10), 300, 3);
    expect(handed.state).toBe('handed');
    // Missing past the forget period: forgotten.
    t.sweep(4, 400, 400);
    expect(handed.state).toBe('missing');
    t.sweep(5, 5_399, 5_399);
    expect(t.get('a.png')).toBeDefined();
    t.sweep(6, 5_400, 5_400);
    expect(t.get('a.png')).toBeUndefined();
    expect(t.counts()).toMatchObject({ missing: 0 });
  });
});

describe('the ready queue', () => {
  it('gives values pushed behind only when no other value waits, each lane in order', async () => {
    const q = createReadyQueue<string>();
    for (const v of ['known-1', 'known-2', 'known-3']) q.pushBehind(v);
    q.push('new-1');
    const taken: string[] = [];
    for await (const v of q) {
      taken.push(v);
      // A value pushed while the queue is being read still goes before the ones behind.
      if (v === 'known-1') q.push('new-2');
      if (v === 'known-3') q.end();
    }
    expect(taken).toEqual(['new-1', 'known-1', 'new-2', 'known-2', 'known-3']);
    expect(q.size).toBe(0);
  });
});

describe('the mount guard', () => {
  it('knows a mount point from a plain folder, and says plainly when the folder is gone', async () => {
    expect((await createMountGuard('/dev/shm')).wasMountPoint).toBe(true);
    const { dir, remove } = await tempDir('genpipe-guard-');
    const guard = await createMountGuard(dir);
    expect(guard.wasMountPoint).toBe(false);
    expect(await guard.check()).toEqual({ ok: true });
    await remove();
    expect(await guard.check()).toEqual({ ok: false, message: WATCH_TEXTS.missing(dir) });
    await expect(createMountGuard(dir)).rejects.toThrow(WATCH_TEXTS.notAFolderAtStart(dir));
  });
});

describe('completeness of media files', () => {
  let dir: string;
  let remove: () => Promise<void>;

  beforeAll(async () => {
    ({ dir, remove } = await tempDir('genpipe-watch-rules-'));
    dir = await realpath(dir);
    const src = 'testsrc2=size=64x48:rate=10:duration=1';
    const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
    await runFfmpeg(['-f', 'lavfi', '-i', src, ...x264, '-movflags', '+faststart', join(dir, 'fast.mp4')]);
    await runFfmpeg(['-f', 'lavfi', '-i', src, ...x264, join(dir, 'plain.mov')]);
    await runFfmpeg([
      '-f',
      'lavfi',
      '-i',
      src,
      '-c:v',
      'libvpx',
      '-deadline',
      'realtime',
      join(dir, 'v.webm'),
    ]);
  });
  afterAll(() => remove());

  async function cut(name: string, fraction: number): Promise<string> {
    const bytes = await readFile(join(dir, name));
    const path = join(dir, `cut-${fraction}-${name}`);
    await writeFile(path, bytes.subarray(0, Math.floor(bytes.length * fraction)));
    return path;
  }

  it('knows whole MP4, MOV and WebM files are whole', async () => {
    expect(await containerVerdict(join(dir, 'fast.mp4'), 'video/mp4')).toBeNull();
    expect(await containerVerdict(join(dir, 'plain.mov'), 'video/quicktime')).toBeNull();
    expect(await containerVerdict(join(dir, 'v.webm'), 'video/webm')).toBeNull();
    expect(await checkComplete(join(dir, 'fast.mp4'))).toEqual({
      complete: true,
      kind: 'video',
      mime: 'video/mp4',
    });
  });

  it('catches a half-copied faststart MP4 and WebM that ffprobe alone takes for whole', async () => {
    const mp4 = await cut('fast.mp4', 0.6);
    const webm = await cut('v.webm', 0.6);
    // ffprobe reads the headers only and is satisfied:
    await expect(probeVideo(mp4)).resolves.toMatchObject({ durationSeconds: 1 });
    await expect(probeVideo(webm)).resolves.toMatchObject({ durationSeconds: 1 });
    expect(await containerVerdict(mp4, 'video/mp4')).toMatch(
      /^video is incomplete: its 'mdat' box runs \d+ bytes past/,
    );
    expect(await containerVerdict(webm, 'video/webm')).toMatch(
      /^video is incomplete: its Segment runs \d+ bytes past/,
    );
    expect(await checkComplete(mp4)).toMatchObject({ complete: false, kind: 'video' });
    const movHead = await cut('plain.mov', 0.5); // moov at the end: not there yet
    expect(await checkComplete(movHead)).toMatchObject({ complete: false, kind: 'video' });
  });

  it('judges an image whose header claims more than any position takes by its structure, not a decode', async () => {
    const whole = await claimedSizeBytes('png', 60000, 60000);
    await writeFile(join(dir, 'vast.png'), whole);
    await writeFile(join(dir, 'vast-half.png'), whole.subarray(0, whole.length - 12)); // no IEND yet
    // The check then refuses it with the service's text; waiting on a decode would hold it forever.
    expect(await checkComplete(join(dir, 'vast.png'))).toEqual({
      complete: true,
      kind: 'image',
      mime: 'image/png',
    });
    expect(await checkComplete(join(dir, 'vast-half.png'))).toEqual({
      complete: false,
      kind: 'image',
      mime: 'image/png',
      reason: 'image is incomplete: the PNG file ends before its structure does',
    });
  });

  it('holds empty files and passes files of no known type on stability alone', async () => {
    await writeFile(join(dir, 'empty.png'), '');
    await writeFile(join(dir, 'prompt.txt'), 'a cat');
    expect(await checkComplete(join(dir, 'empty.png'))).toMatchObject({
      complete: false,
      reason: 'file is empty',
    });
    expect(await checkComplete(join(dir, 'prompt.txt'))).toEqual({
      complete: true,
      kind: 'other',
      mime: null,
    });
    expect(await checkComplete(join(dir, 'gone.png'))).toMatchObject({
      complete: false,
      reason: 'file not found or not readable',
    });
  });

  it('looks at one path from a file event with the rules discovery uses', async () => {
    const root = join(dir, 'tree');
    for (const rel of [
      'a.png',
      'a.png.json',
      'lone.json',
      '.dot/b.png',
      'c.tmp',
      'genpipe.yaml',
      'refs/s.png',
    ]) {
      await mkdir(join(root, rel, '..'), { recursive: true });
      await writeFile(join(root, rel), 'xy');
    }
    await symlink(join(root, 'a.png'), join(root, 'link.png'));
    const rules = { root, skipFiles: new Set([join(root, 'refs', 's.png')]) };
    const look = (rel: string) => lookAtPath(rules, join(root, rel));
    expect(await look('a.png')).toMatchObject({ input: 'a.png', sig: { size: 2 } });
    expect(await look('lone.json')).toMatchObject({ input: 'lone.json' });
    for (const rel of [
      'a.png.json',
      '.dot/b.png',
      'c.tmp',
      'genpipe.yaml',
      'refs/s.png',
      'link.png',
      'nope.png',
    ]) {
      expect(await look(rel)).toBeNull();
    }
    expect(await lookAtPath({ ...rules, shouldSkip: (i) => i === 'a.png' }, join(root, 'a.png'))).toBeNull();
    expect(await lookAtPath(rules, join(dir, 'fast.mp4'))).toBeNull(); // outside the tree
    expect(nameSkipReason('x.png.json', (n) => n === 'x.png')).toBe(SKIP_REASONS.sidecar);
    expect(nameSkipReason('x.json', () => false)).toBeNull();
  });
});
