/**
 * Helpers of the `genpipe run` tests: a generated input folder mixing good and bad files, a hash of a
 * tree (to prove the input dir is never modified), reading a batch's JSON outputs, and running the CLI
 * as a child process.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { verboseArgs } from '../helpers/processes.ts';
import { makeImage, makeVideo, truncated } from '../media/fixtures.ts';
import { put } from './stage-helpers.ts';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'genpipe.js');

/** The recipe of the mixed folder. */
export const MIXED_RECIPE = `rules:
  - match: "layers/*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "split into layers" }
  - match: "inline/*"
    input_as: source
    upload: base64
    request: { type: image_edit, model: uni-1, prompt: "watercolor", image_ref: [{ ref: style }] }
  - match: "photos/*"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor", image_ref: [{ ref: style }] }
  - match: "clips/*"
    request: { type: video_reframe, model: ray-3.2, aspect_ratio: "9:16", video: { resolution: 360p } }
  - match: "prompts/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "16:9" }
  - match: "misc/**"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "anything" }
references:
  style: refs/style.png
`;

/** A word the test emulator's moderation blocks (config `blocked_words`). */
export const BLOCKED_WORD = 'forbidden';

/** What each input of the mixed folder should end as. */
export const MIXED_EXPECTED = {
  'photos/good.png': 'succeeded',
  'photos/sidecar.jpg': 'succeeded',
  'photos/really-a-jpeg.png': 'succeeded',
  'photos/empty.png': 'failed',
  'photos/truncated.png': 'failed',
  'photos/wide.png': 'failed',
  'inline/small.png': 'succeeded',
  'layers/stack.png': 'succeeded',
  'clips/ok.mp4': 'succeeded',
  'clips/long.mp4': 'failed',
  'clips/not-a-video.mp4': 'failed',
  'prompts/fox.txt': 'succeeded',
  'prompts/blocked.txt': 'failed',
  'misc/blob.bin': 'failed',
  'other/notes.md': 'skipped',
} as const;

/**
 * Writes the mixed folder under `dir`: good images (one with a sidecar, one mislabelled JPEG-in-.png,
 * one sent as base64), a layer-stack request, a good video, prompt files (one moderated), and bad
 * files: empty, truncated, 8001 px wide, a 31 s video, a PNG named .mp4, unknown bytes, plus a file no
 * rule matches and entries discovery must leave out (a dotfile, a `.part` file). `scratch` is a folder
 * outside `dir` for intermediate files.
 */
export async function writeMixedFolder(dir: string, scratch: string): Promise<void> {
  await put(dir, 'genpipe.yaml', MIXED_RECIPE);
  await makeImage(await put(dir, 'refs/style.png', ''), { width: 24, height: 24 });
  await makeImage(await put(dir, 'photos/good.png', ''), { width: 64, height: 48 });
  await makeImage(await put(dir, 'photos/sidecar.jpg', ''), { width: 48, height: 64 });
  await put(dir, 'photos/sidecar.jpg.json', JSON.stringify({ prompt: 'pencil sketch' }));
  const jpeg = await makeImage(await put(scratch, 'tmp.jpg', ''), { width: 40, height: 30 });
  await put(dir, 'photos/really-a-jpeg.png', await readFile(jpeg));
  await put(dir, 'photos/empty.png', '');
  await truncated(
    await makeImage(await put(scratch, 'whole.png', ''), { width: 200, height: 150 }),
    join(dir, 'photos', 'truncated.png'),
    0.5,
  );
  await sharp({ create: { width: 8001, height: 10, channels: 3, background: '#808080' } })
    .png()
    .toFile(join(dir, 'photos', 'wide.png'));
  await makeImage(await put(dir, 'inline/small.png', ''), { width: 32, height: 32 });
  await makeImage(await put(dir, 'layers/stack.png', ''), { width: 96, height: 64 });
  await makeVideo(await put(dir, 'clips/ok.mp4', ''), { seconds: 1, fps: 12, width: 64, height: 36 });
  await makeVideo(await put(dir, 'clips/long.mp4', ''), { seconds: 31, fps: 1, width: 32, height: 32 });
  await put(dir, 'clips/not-a-video.mp4', await readFile(join(dir, 'photos', 'good.png')));
  await put(dir, 'prompts/fox.txt', 'a red fox in the snow\n');
  await put(dir, 'prompts/blocked.txt', `a ${BLOCKED_WORD} picture\n`);
  await put(dir, 'misc/blob.bin', Buffer.from([0x00, 0xff, 0x13, 0x37, 0x00, 0x42, 0x99, 0x00]));
  await put(dir, 'other/notes.md', '# notes\n');
  await put(dir, '.hidden.png', await readFile(join(dir, 'photos', 'good.png')));
  await put(dir, 'photos/download.png.part', 'partial');
}

/** sha256 over every entry of a tree (path, type, size, mtime and content): equal hashes, equal trees. */
export async function hashTree(dir: string): Promise<string> {
  const hash = createHash('sha256');
  const walk = async (rel: string): Promise<void> => {
    const entries = (await readdir(join(dir, rel))).sort();
    for (const name of entries) {
      const path = rel ? `${rel}/${name}` : name;
      const st = await lstat(join(dir, path));
      hash.update(`${path}\0${st.isDirectory() ? 'd' : 'f'}\0${st.size}\0${st.mtimeMs}\0`);
      if (st.isDirectory()) await walk(path);
      else hash.update(await readFile(join(dir, path)));
    }
  };
  await walk('');
  return hash.digest('hex');
}

/** Reads and parses a JSON file. */
// biome-ignore lint/suspicious/noExplicitAny: tests read results loosely
export async function readJson(path: string): Promise<any> {
  return JSON.parse(await readFile(path, 'utf8'));
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment without any inherited GENPIPE_* variable, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GENPIPE_')) env[k] = v;
  return { ...env, ...extra };
}

/**
 * Runs `node bin/genpipe.js <args>` to its exit, asynchronously (an emulator in the test's own process
 * keeps answering meanwhile).
 */
export function runGenpipe(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { cwd?: string; timeoutMs?: number; onStdout?: (text: string, child: ChildProcess) => void } = {},
): Promise<CliResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...verboseArgs(args)], {
      env,
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
      opts.onStdout?.(stdout, child);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`genpipe ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
