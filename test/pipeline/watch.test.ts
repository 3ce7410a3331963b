/**
 * The watcher in process, on real folders. Where a test is about the quiet period or the give-up
 * period, the watcher's clock (Date) is a fake that moves only when the test moves it — a slow writer's
 * pauses then never outlast the quiet period, however busy the machine. "Nothing more is handed over"
 * is checked after a rescan by the watcher's own counts: no file left pending or being checked.
 */
import { writeFileSync } from 'node:fs';
import { appendFile, mkdir, readFile, realpath, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runFfmpeg } from '../../src/media/index.ts';
import { incompleteReason, readyItem, startWatcher } from '../../src/pipeline/watch/index.ts';
import { until } from '../helpers/emulator.ts';
import { tempDir } from '../media/fixtures.ts';
import {
  bufferHash,
  fileHash,
  noisePng,
  type RecordedWatcher,
  recordWatcher,
  sleep,
  writeSlowly,
} from './watch-helpers.ts';

const QUIET = 300;

let base: string;
let remove: () => Promise<void>;
let png: Buffer;
let video: Buffer;
let n = 0;
const open: RecordedWatcher[] = [];

beforeAll(async () => {
  ({ dir: base, remove } = await tempDir('genpipe-watch-'));
  base = await realpath(base);
  png = await noisePng(64, 64);
  const clip = join(base, 'clip.mp4');
  await runFfmpeg([
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=64x48:rate=10:duration=1',
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p',
    '-movflags',
    '+faststart',
    clip,
  ]);
  video = await readFile(clip);
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.watcher.close()));
  vi.useRealTimers();
});

/** Fakes Date only (timers stay real): the watcher's sense of time moves only through `advance`. */
function fakeClock(): { advance(ms: number): void } {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
  return { advance: (ms) => vi.setSystemTime(Date.now() + ms) };
}

/** Moves the fake clock on in small steps until `done()` holds (a real wait between steps). */
async function runClockUntil(clock: { advance(ms: number): void }, done: () => boolean): Promise<void> {
  await until(async () => {
    if (done()) return true;
    clock.advance(50);
    return false;
  });
}

/**
 * Writes each file in `chunks` appends `gapMs` apart, side by side, in real time and on the fake clock
 * alike. Resolves with the (fake) time of the last chunk.
 */
async function writeSlowlyOn(
  clock: { advance(ms: number): void },
  files: Array<[path: string, bytes: Buffer]>,
  chunks: number,
  gapMs: number,
): Promise<number> {
  for (const [path] of files) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, '');
  }
  for (let i = 0; i < chunks; i++) {
    await sleep(gapMs);
    clock.advance(gapMs);
    await Promise.all(
      files.map(([path, bytes]) => {
        const step = Math.ceil(bytes.length / chunks);
        return appendFile(path, bytes.subarray(i * step, (i + 1) * step));
      }),
    );
  }
  return Date.now();
}

/** After a rescan: nothing is pending or being checked, so nothing more will be handed over. */
async function expectSettled(rec: RecordedWatcher): Promise<void> {
  await rec.watcher.rescanNow();
  expect(rec.watcher.stats()).toMatchObject({ pending: 0, checking: 0 });
}
afterAll(() => remove());

/** A fresh inbox for one test. */
async function inbox(): Promise<string> {
  const dir = join(base, `case-${++n}`, 'inbox');
  await mkdir(dir, { recursive: true });
  return dir;
}

async function watch(opts: Parameters<typeof recordWatcher>[0]): Promise<RecordedWatcher> {
  const rec = await recordWatcher(opts);
  open.push(rec);
  return rec;
}

describe('genpipe watch: the watcher', () => {
  it('takes a file written slowly in chunks only after the last chunk plus the quiet period', async () => {
    const dir = await inbox();
    const clock = fakeClock();
    const rec = await watch({ dir });
    await rec.watcher.firstScan;
    const text = Buffer.from('a prompt written slowly, one piece at a time, by a slow editor\n'.repeat(20));
    // 10 chunks, 100 ms apart: 1 s of writing, each gap shorter than the quiet period (on the fake
    // clock, which only the writer moves, whatever the real gaps turn out to be).
    const done = await writeSlowlyOn(
      clock,
      [
        [join(dir, 'slow.png'), png],
        [join(dir, 'prompts', 'slow.txt'), text],
      ],
      10,
      100,
    );
    await runClockUntil(clock, () => rec.ready.length >= 2 && rec.hashes.size >= 2);
    const byInput = Object.fromEntries(rec.ready.map((r) => [r.input, r]));
    expect(Object.keys(byInput).sort()).toEqual(['prompts/slow.txt', 'slow.png']);
    const p = byInput['slow.png']!;
    const t = byInput['prompts/slow.txt']!;
    expect(p.readyAt - done).toBeGreaterThanOrEqual(QUIET);
    expect(t.readyAt - done).toBeGreaterThanOrEqual(QUIET);
    expect(p).toMatchObject({
      size: png.length,
      kind: 'image',
      mime: 'image/png',
      complete: true,
      handover: 1,
    });
    expect(t).toMatchObject({ size: text.length, kind: 'other', complete: true, handover: 1 });
    expect(rec.hashes.get(p)).toBe(bufferHash(png));
    expect(rec.hashes.get(t)).toBe(bufferHash(text));
    // Another rescan later: nothing is handed over twice.
    await expectSettled(rec);
    expect(rec.ready).toHaveLength(2);
  });

  it('takes a file written under a temporary name and renamed in exactly once', async () => {
    const dir = await inbox();
    const rec = await watch({ dir });
    await rec.watcher.firstScan;
    await writeSlowly(join(dir, 'clip.mp4.part'), video, 4, 100);
    // A rescan does not even track it: it can never be taken under its temporary name.
    await rec.watcher.rescanNow();
    expect(rec.watcher.stats().tracked).toBe(0);
    expect(rec.ready).toEqual([]);
    await rename(join(dir, 'clip.mp4.part'), join(dir, 'clip.mp4'));
    await until(async () => rec.ready.length > 0 && rec.hashes.size > 0);
    await expectSettled(rec);
    expect(rec.ready).toHaveLength(1);
    expect(rec.ready[0]).toMatchObject({
      input: 'clip.mp4',
      kind: 'video',
      complete: true,
      size: video.length,
    });
    expect(rec.hashes.get(rec.ready[0]!)).toBe(bufferHash(video));
  });

  it('never hands over a file that was half written when it started, even if the writer stalls', async () => {
    const dir = await inbox();
    const path = join(dir, 'half.png');
    const half = Math.floor(png.length / 2);
    await writeFile(path, png.subarray(0, half));
    const rec = await watch({ dir });
    await rec.watcher.firstScan;
    // The writer stalls past the quiet period: size and mtime are stable, the PNG is not. Held back, it
    // is handed over only once it changes (or after the give-up period, ten minutes here).
    await until(async () => rec.watcher.stats().held === 1);
    expect(rec.ready).toEqual([]);
    await appendFile(path, png.subarray(half));
    await until(async () => rec.ready.length > 0 && rec.hashes.size > 0);
    await expectSettled(rec);
    expect(rec.ready).toHaveLength(1);
    expect(rec.ready[0]).toMatchObject({ input: 'half.png', size: png.length, complete: true });
    expect(rec.hashes.get(rec.ready[0]!)).toBe(bufferHash(png));
    expect(await fileHash(path)).toBe(bufferHash(png));
  });

  it('holds a truncated but stable PNG back, then hands it over as it is after the give-up period', async () => {
    const dir = await inbox();
    const cut = png.subarray(0, Math.floor(png.length * 0.6));
    await writeFile(join(dir, 'cut.png'), cut);
    await writeFile(join(dir, 'whole.png'), png);
    // The give-up period runs on the fake clock: it cannot pass while the checks are still running.
    const clock = fakeClock();
    const rec = await watch({ dir, giveUpMs: 1_500 });
    const started = Date.now();
    await rec.watcher.firstScan;
    clock.advance(QUIET);
    await until(async () => rec.ready.some((r) => r.input === 'whole.png'));
    // cut.png's completeness check may still be running when whole.png is handed over.
    await until(async () => rec.watcher.stats().held === 1);
    expect(rec.readyFor('cut.png')).toEqual([]);
    expect(rec.watcher.stats()).toMatchObject({ held: 1, handed: 1 });
    clock.advance(1_500);
    await until(async () => rec.readyFor('cut.png').length > 0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(rec.readyFor('cut.png')[0]).toMatchObject({
      complete: false,
      kind: 'image',
      size: cut.length,
      // libvips sometimes loses its message when two decodes fail at once ("… unknown error").
      reason: expect.stringMatching(/^image could not be decoded: /),
    });
    expect(rec.watcher.stats()).toMatchObject({ gaveUp: 1, handedOver: 2, held: 0 });
    const given = rec.readyFor('cut.png')[0]!;
    expect(incompleteReason(given)).toMatch(/^the file never became complete \(image could not be decoded: /);
    expect(incompleteReason(rec.readyFor('whole.png')[0]!)).toBeNull();
    expect(readyItem(given)).toMatchObject({ input: 'cut.png', state: 'discovered', size: cut.length });
  });

  it('ignores dotfiles, dot-folders, temporary names, sidecars and recipes', async () => {
    const dir = await inbox();
    for (const rel of [
      '.hidden.png',
      '.sync/a.png',
      'b.tmp',
      'c.crdownload',
      '~$lock.docx',
      'd.swp',
      'genpipe.yaml',
      'ok.png.json',
    ]) {
      await mkdir(join(dir, rel, '..'), { recursive: true });
      await writeFile(join(dir, rel), 'x');
    }
    await writeFile(join(dir, 'ok.png'), png);
    const rec = await watch({ dir });
    await writeFile(join(dir, '.late.png'), png); // seen by the file events too
    await writeFile(join(dir, 'late.part'), png);
    await until(async () => rec.ready.length > 0);
    // After a rescan only ok.png is known at all: the others can never be handed over.
    await expectSettled(rec);
    expect(rec.watcher.stats().tracked).toBe(1);
    expect(rec.ready.map((r) => r.input)).toEqual(['ok.png']);
  });

  it('pauses when the folder disappears and resumes when it is back, re-handing only changed files', async () => {
    const dir = await inbox();
    await writeFile(join(dir, 'a.png'), png);
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'b.txt'), 'first version');
    const rec = await watch({ dir });
    await until(async () => rec.ready.length === 2);
    const away = join(dir, '..', 'inbox-away');
    await rename(dir, away); // the share drops
    await until(async () => rec.pauses.length > 0);
    expect(rec.pauses[0]).toContain('is missing (unmounted or removed); paused');
    expect(rec.watcher.stats()).toMatchObject({ paused: true, handed: 2, missing: 0 });
    await appendFile(join(away, 'sub', 'b.txt'), ', and a second');
    await sleep(QUIET);
    await rename(away, dir); // the share is back
    await until(async () => rec.resumes === 1);
    await until(async () => rec.readyFor('sub/b.txt').length === 2);
    await expectSettled(rec);
    expect(rec.readyFor('a.png')).toHaveLength(1);
    expect(rec.readyFor('sub/b.txt').map((r) => r.handover)).toEqual([1, 2]);
    expect(rec.watcher.stats()).toMatchObject({ paused: false, pauses: 1, handed: 2, tracked: 2 });
  });

  it('keeps what it knew when the folder is removed and recreated empty before its files come back', async () => {
    const dir = await inbox();
    await writeFile(join(dir, 'a.png'), png);
    const rec = await watch({ dir, hints: false, rescanMs: 200 });
    await until(async () => rec.ready.length === 1);
    const away = join(dir, '..', 'away');
    await rename(dir, away);
    await until(async () => rec.pauses.length > 0);
    await mkdir(dir); // recreated empty: a rescan now finds nothing
    await until(async () => rec.resumes === 1);
    await rec.watcher.rescanNow();
    expect(rec.watcher.stats()).toMatchObject({ missing: 1 });
    await rename(join(away, 'a.png'), join(dir, 'a.png')); // same size and mtime
    await until(async () => rec.watcher.stats().handed === 1);
    await expectSettled(rec);
    expect(rec.ready).toHaveLength(1);
  });

  it('finds files by rescans alone, and with polling file events', async () => {
    const dir = await inbox();
    const scansOnly = await watch({ dir, hints: false, rescanMs: 200 });
    await scansOnly.watcher.firstScan;
    await writeFile(join(dir, 'a.txt'), 'found by a rescan');
    await until(async () => scansOnly.ready.length === 1);
    expect(scansOnly.watcher.stats().scans).toBeGreaterThan(1);

    const dir2 = await inbox();
    const polled = await watch({ dir: dir2, poll: true, pollIntervalMs: 100, rescanMs: 60_000 });
    await polled.watcher.firstScan;
    await writeFile(join(dir2, 'b.txt'), 'found by a polling event');
    await until(async () => polled.ready.length === 1);
    expect(polled.watcher.stats().scans).toBe(1);
  });

  it('hands over at once, unchecked, a file `known` names with its size and mtime; others wait', async () => {
    const dir = await inbox();
    for (const name of ['done.png', 'changed.png', 'new.png']) await writeFile(join(dir, name), png);
    const finished = new Map<string, { size: number; mtimeMs: number }>();
    for (const name of ['done.png', 'changed.png']) {
      const st = await stat(join(dir, name));
      finished.set(name, { size: st.size, mtimeMs: st.mtimeMs });
    }
    // As if changed.png had been finished at another size.
    finished.set('changed.png', { ...finished.get('changed.png')!, size: png.length + 1 });
    const asked: string[] = [];
    // A quiet period no file can get through during the test: only the known file can be handed over.
    // Rescans only when asked, and no file events, so that each look at the folder is counted here.
    const rec = await watch({
      dir,
      quietMs: 60_000,
      rescanMs: 60_000,
      hints: false,
      known: (f) => {
        asked.push(f.input);
        const was = finished.get(f.input);
        return was !== undefined && was.size === f.size && was.mtimeMs === f.mtimeMs;
      },
    });
    await rec.watcher.firstScan;
    expect(rec.ready.map((r) => [r.input, r.known, r.complete, r.handover])).toEqual([
      ['done.png', true, true, 1],
    ]);
    expect(asked.sort()).toEqual(['changed.png', 'done.png', 'new.png']);
    expect(rec.watcher.stats()).toMatchObject({ checks: 0, known: 1, handedOver: 1, pending: 2, handed: 1 });
    // A second rescan neither asks about the handed file again nor hands it over twice.
    asked.length = 0;
    await rec.watcher.rescanNow();
    expect(asked.sort()).toEqual(['changed.png', 'new.png']);
    expect(rec.ready).toHaveLength(1);
  });

  it('scans once file events are live: a file arriving during the first scan still has its event', async () => {
    const dir = await inbox();
    // Enough files that chokidar takes a while to read the folder before it watches it.
    const names = Array.from({ length: 1000 }, (_, i) => `old-${i}.txt`);
    for (let i = 0; i < names.length; i += 500) {
      await Promise.all(names.slice(i, i + 500).map((name) => writeFile(join(dir, name), 'a prompt')));
    }
    // The new file arrives once the first scan has listed the folder (it is seen there: too late for it).
    let arrived = false;
    const known = (f: { input: string }) => {
      if (!arrived) {
        writeFileSync(join(dir, 'new.txt'), 'a new prompt');
        arrived = true;
      }
      return f.input.startsWith('old-');
    };
    // No periodic rescan during the test: only a file event can bring the new file in.
    const rec = await watch({ dir, quietMs: 100, rescanMs: 600_000, known });
    await rec.watcher.firstScan;
    expect(rec.watcher.stats()).toMatchObject({ known: 1000, scans: 1 });
    await until(async () => rec.readyFor('new.txt').length === 1, 20_000);
    expect(rec.watcher.stats()).toMatchObject({ scans: 1, checks: 1 });
  }, 60_000);

  it('refuses an out dir inside the watched folder, and a folder that does not exist', async () => {
    const dir = await inbox();
    await expect(startWatcher({ dir, outDir: join(dir, 'out'), onReady: () => {} })).rejects.toThrow(
      'outputs must live outside the watched tree',
    );
    await expect(startWatcher({ dir, outDir: dir, onReady: () => {} })).rejects.toThrow(
      'the out dir and the watched folder are the same folder',
    );
    await expect(startWatcher({ dir: join(dir, 'nope'), onReady: () => {} })).rejects.toThrow(
      'does not exist or is not a folder',
    );
    const ok = await startWatcher({ dir, outDir: join(dir, '..', 'out'), onReady: () => {} });
    await ok.close();
  });
});

describe('genpipe watch: when checks run', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Resolves once `pred` holds, looking again on every turn of the event loop (fake timers stay put). */
  async function settle(pred: () => boolean, what: string): Promise<void> {
    const end = performance.now() + 15_000;
    while (!pred()) {
      if (performance.now() > end) throw new Error(`no ${what}`);
      await new Promise((r) => setImmediate(r));
    }
  }

  it('checks files as soon as their quiet period ends, not at the next tick, one check after another', async () => {
    const dir = await inbox();
    // The clock and timers are fake; the files, the scans and the checks are real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const ready: string[] = [];
    const w = await startWatcher({
      dir,
      quietMs: 4_000, // a tick every second
      rescanMs: 600_000,
      hints: false,
      onReady: (f) => {
        ready.push(f.input);
      },
    });
    try {
      await w.firstScan;
      await vi.advanceTimersByTimeAsync(10); // the files' quiet periods end 10 ms after a tick
      for (let i = 0; i < 6; i++) await writeFile(join(dir, `p${i}.txt`), `a prompt, ${i}`);
      await w.rescanNow();
      await vi.advanceTimersByTimeAsync(4_000);
      // The clock stands still now: no tick comes, yet all six are checked (two at a time) and handed over.
      await settle(() => ready.length === 6, 'six hand-overs');
      expect(w.stats()).toMatchObject({ checks: 6, handedOver: 6 });
      expect(ready.sort()).toEqual(['p0.txt', 'p1.txt', 'p2.txt', 'p3.txt', 'p4.txt', 'p5.txt']);
    } finally {
      await w.close();
    }
  });
});
