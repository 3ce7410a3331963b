/**
 * Helpers for the watcher's tests: noise images that do not compress (so a cut-off copy is really cut
 * off), chunked slow writes, hashes, and a watcher whose hand-overs, pauses and resumes are recorded.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import sharp from 'sharp';
import {
  type ReadyFile,
  startWatcher,
  type Watcher,
  type WatcherOptions,
} from '../../src/pipeline/watch/index.ts';

/** PNG bytes of a width x height image of random pixels (about 3 bytes a pixel, whatever the encoder). */
export async function noisePng(width = 64, height = 64): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (Math.random() * 256) | 0;
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** sha256 of a file, streamed. */
export async function fileHash(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

export const bufferHash = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * Writes `bytes` to `path` in `chunks` appends, `gapMs` apart (the file exists, empty, from the start).
 * Resolves with the time the last chunk was written.
 */
export async function writeSlowly(
  path: string,
  bytes: Buffer,
  chunks: number,
  gapMs: number,
): Promise<number> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, '');
  const step = Math.ceil(bytes.length / chunks);
  let last = Date.now();
  for (let i = 0; i < chunks; i++) {
    await sleep(gapMs);
    await appendFile(path, bytes.subarray(i * step, (i + 1) * step));
    last = Date.now();
  }
  return last;
}

export interface RecordedWatcher {
  watcher: Watcher;
  ready: ReadyFile[];
  /** Bytes hash of each hand-over, read at hand-over time (what the pipeline would have read). */
  hashes: Map<ReadyFile, string>;
  pauses: string[];
  resumes: number;
  problems: string[];
  readyFor(input: string): ReadyFile[];
}

/** Starts a watcher with short timings that records everything it reports. */
export async function recordWatcher(
  opts: Partial<WatcherOptions> & Pick<WatcherOptions, 'dir'>,
): Promise<RecordedWatcher> {
  const rec: Omit<RecordedWatcher, 'watcher'> = {
    ready: [],
    hashes: new Map(),
    pauses: [],
    resumes: 0,
    problems: [],
    readyFor: (input) => rec.ready.filter((r) => r.input === input),
  };
  const watcher = await startWatcher({
    quietMs: 300,
    rescanMs: 1_000,
    retryMs: 100,
    ...opts,
    onReady: async (file) => {
      rec.ready.push(file);
      rec.hashes.set(file, await fileHash(file.absPath));
    },
    onPause: (m) => rec.pauses.push(m),
    onResume: () => {
      rec.resumes += 1;
    },
    onProblem: (m) => rec.problems.push(m),
  });
  return Object.assign(rec, { watcher }) as RecordedWatcher;
}
