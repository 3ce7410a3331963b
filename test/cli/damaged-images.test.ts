/**
 * A truncated or damaged image is refused by the local check in plain words that say what is wrong
 * with the file, whatever its format: `image could not be decoded: the PNG file is truncated (…)`, never
 * a bare decoder message ("libspng read error") nor a path. Real files made with sharp, cut or damaged;
 * `genpipe files upload` as a child process against an emulator on loopback, nothing uploaded.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-damaged-'));
});

afterAll(async () => {
  await emu?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The formats sharp writes and reads, with their names in the refusals. */
const FORMATS = [
  { ext: 'png', name: 'PNG' },
  { ext: 'jpg', name: 'JPEG' },
  { ext: 'webp', name: 'WebP' },
  { ext: 'gif', name: 'GIF' },
  { ext: 'avif', name: 'AVIF' },
] as const;

/** A noisy 256x192 image in the format of `ext` (noise: no format compresses it to a few bytes). */
function encode(ext: string): Promise<Buffer> {
  const img = sharp({
    create: {
      width: 256,
      height: 192,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 50 },
    },
  });
  return img.toFormat(ext === 'jpg' ? 'jpeg' : (ext as keyof sharp.FormatEnum)).toBuffer();
}

async function upload(path: string) {
  const r = await runCli(['files', 'upload', path], cliEnv(emu));
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr).toContain('checked locally: nothing was uploaded or sent');
  // The path is named once, at the start: never again inside the decoder's words.
  expect(r.stderr.split(path).length - 1).toBe(1);
  return r.stderr;
}

describe('files upload of a truncated or damaged image', () => {
  for (const { ext, name } of FORMATS) {
    it(`${name}: cut in half, the refusal says the ${name} file is truncated`, async () => {
      const bytes = await encode(ext);
      const path = join(dir, `half.${ext}`);
      await writeFile(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
      const stderr = await upload(path);
      expect(stderr).toContain(`${path}: image could not be decoded: the ${name} file is truncated (`);
    });
  }

  it('PNG: whole but with damaged bytes, the refusal says the PNG file is corrupt', async () => {
    const bytes = Buffer.from(await encode('png'));
    bytes.fill(0xaa, Math.floor(bytes.length / 3), Math.floor(bytes.length / 3) + 200);
    const path = join(dir, 'damaged.png');
    await writeFile(path, bytes);
    const stderr = await upload(path);
    expect(stderr).toContain(`${path}: image could not be decoded: the PNG file is corrupt (`);
  });

  it('nothing reached the service', async () => {
    expect((await call(emu, 'GET', '/v1/files?limit=100')).body.data).toEqual([]);
  });
});

describe('genpipe run: result.json of a file refused locally keeps what was learned of it', () => {
  it('the sha256 of a small file failed at plan, the size of a truncated JPEG, a bare PNG signature called truncated', async () => {
    const input = join(dir, 'run-in');
    const out = join(dir, 'run-out');
    await mkdir(input);
    await writeFile(
      join(input, 'genpipe.yaml'),
      'rules:\n  - match: "*"\n    input_as: source\n    request: { type: image_edit, model: uni-1, prompt: "x" }\n',
    );
    const garbage = Buffer.from('not an image at all');
    await writeFile(join(input, 'garbage.jpg'), garbage);
    const jpeg = await encode('jpg');
    await writeFile(join(input, 'half.jpg'), jpeg.subarray(0, Math.floor(jpeg.length / 2)));
    await writeFile(join(input, 'sig.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const r = await runCli(['run', input, '--out', out, '--emulator', '-q'], process.env, 60_000);
    expect(r.code, r.stderr).toBe(1);
    const result = async (name: string) => JSON.parse(await readFile(join(out, name, 'result.json'), 'utf8'));
    const g = await result('garbage.jpg');
    expect(g).toMatchObject({ status: 'failed', failed_stage: 'plan' });
    expect(g.input_facts.sha256).toBe(createHash('sha256').update(garbage).digest('hex'));
    const h = await result('half.jpg');
    expect(h).toMatchObject({ status: 'failed', failed_stage: 'check' });
    expect(h.failure_reason).toContain('the JPEG file is truncated');
    expect(h.input_facts).toMatchObject({ width: 256, height: 192 });
    const s = await result('sig.png');
    expect(s.failure_reason).toContain('the PNG file is truncated');
  }, 90_000);
});
