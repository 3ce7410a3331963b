/**
 * The local media check of `genpipe generate` (its local `--source` / `--image-ref` files) and `genpipe
 * files upload`, as a user runs them: child processes against an emulator on loopback. A file the
 * service would refuse, or that would turn `failed` once uploaded, is refused before anything is
 * uploaded or sent (the emulator holds no file and no generation afterwards), with exit 1 and a message
 * naming the file and the rule — the service's own detail text where it has one.
 */
import { stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { runFfmpeg } from '../../src/media/index.ts';
import { FILE_FAILURE_REASONS, imageTooManyPixelsDetail } from '../../src/spec/index.ts';
import { adminRows, writePng } from '../client/client-helpers.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { writeClaimedSize } from '../media/claimed-size.ts';
import { makeImage, makeVideo, tempDir, truncated } from '../media/fixtures.ts';
import { cliEnv, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;
let remove: () => Promise<void>;
const file = (name: string) => join(dir, name);

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-cli-local-checks-'));
  emu = await startTestEmulator();
  await writePng(file('big.png'), 9000, 30);
  await writeClaimedSize(file('vast.avif'), 'avif', 60000, 60000);
  await writePng(file('ok.png'), 40, 30);
  await writePng(file('heavy.png'), 40, 30);
  await truncate(file('heavy.png'), 53_000_000); // sparse: nothing is really written
  await makeImage(file('photo.jpg'), { width: 320, height: 240 });
  await truncated(file('photo.jpg'), file('cut.jpg'), 0.5);
  await writeFile(file('empty.png'), '');
  await writeFile(file('notes.png'), 'just some words, not an image');
  await makeVideo(file('long.mp4'), { seconds: 31, fps: 2, width: 64, height: 36 });
  await makeVideo(file('clip.mp4'), { seconds: 1, fps: 5, width: 64, height: 36 });
  // A YUV4MPEG2 video: ffprobe reads it, its first bytes name no type.
  const testsrc = 'testsrc2=size=64x36:rate=5:duration=1';
  await runFfmpeg(['-f', 'lavfi', '-i', testsrc, '-pix_fmt', 'yuv420p', file('clip.y4m')]);
  await writeFile(
    file('noise.bin'),
    Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919 + 13) % 256)),
  );
  // A TIFF whose IFD sits after 10 KB of pixels: told from the first 64 KiB, not from the first 4 KiB.
  const raw = Buffer.alloc(60 * 60 * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919) % 251;
  await sharp(raw, { raw: { width: 60, height: 60, channels: 3 } })
    .tiff({ compression: 'none' })
    .toFile(file('scan.tiff'));
}, 60_000);

afterAll(async () => {
  await emu?.close();
  await remove?.();
});

/** Nothing reached the service: no file (in any state), no generation. */
async function expectNothingSent(): Promise<void> {
  expect((await call(emu, 'GET', '/v1/files?limit=100')).body.data).toEqual([]);
  expect((await call(emu, 'GET', '/v1/files?limit=100&state=deleted')).body.data).toEqual([]);
  expect(await adminRows(emu)).toEqual([]);
}

describe('genpipe generate checks its local files before uploading any', () => {
  it('a 9000 px source: the service detail for its position, exit 1, nothing uploaded or created', async () => {
    const r = await runCli(
      ['generate', '--type', 'image_edit', '--prompt', 'x', '--source', file('big.png'), '--wait'],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `--source ${file('big.png')}: ${imageTooManyPixelsDetail('source', 9000, 30)}`,
    );
    expect(r.stderr).toContain('checked locally: nothing was uploaded or sent');
    await expectNothingSent();
  });

  it('an over-long video source of video_reframe: the 30 s rule', async () => {
    const r = await runCli(
      [
        ...['generate', '--type', 'video_reframe', '--model', 'ray-3.2', '--aspect-ratio', '9:16'],
        ...['--prompt', 'x', '--source', file('long.mp4')],
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /--source \S+long\.mp4: source: video is 31(\.\d+)?s long but must be at most 30s for type 'video_reframe'/,
    );
    await expectNothingSent();
  });

  it('an empty, a truncated and a wrong-kind file, at any position; --json gives the file and the reason', async () => {
    const base = ['generate', '--type', 'image_edit', '--prompt', 'x'];
    const empty = await runCli(
      [...base, '--source', file('ok.png'), '--image-ref', file('empty.png'), '--json'],
      cliEnv(emu),
    );
    expect(empty.code, empty.stderr).toBe(1);
    const err = JSON.parse(empty.stderr.trim().split('\n').at(-1) ?? '').error;
    expect(err).toMatchObject({
      name: 'LocalCheckError',
      code: 'GENPIPE_LOCAL_CHECK',
      file: `--image-ref ${file('empty.png')}`,
      reason: 'file is empty',
    });
    const cut = await runCli([...base, '--source', file('cut.jpg')], cliEnv(emu));
    expect(cut.code, cut.stderr).toBe(1);
    expect(cut.stderr).toContain(`--source ${file('cut.jpg')}: image could not be decoded`);
    const video = await runCli([...base, '--source', file('clip.mp4')], cliEnv(emu));
    expect(video.code, video.stderr).toBe(1);
    expect(video.stderr).toContain(
      `--source ${file('clip.mp4')}: wrong type: the file is a video (video/mp4), but source of type 'image_edit' takes an image`,
    );
    await expectNothingSent();
  });
});

describe('genpipe files upload checks the file before uploading it', () => {
  it('refuses an empty, a truncated, an oversized, an unknown and a mislabelled file: exit 1, nothing uploaded', async () => {
    const cases: Array<[string[], string]> = [
      [[file('empty.png')], `${file('empty.png')}: file is empty`],
      [[file('cut.jpg')], `${file('cut.jpg')}: image could not be decoded`],
      [[file('big.png')], imageTooManyPixelsDetail(file('big.png'), 9000, 30)],
      [[file('vast.avif')], imageTooManyPixelsDetail(file('vast.avif'), 60000, 60000)],
      [[file('notes.png')], `${file('notes.png')}: unknown type: the bytes are not an image or a video`],
      [
        [file('ok.png'), '--mime-type', 'image/jpeg'],
        `${file('ok.png')}: ${FILE_FAILURE_REASONS.mimeMismatch('image/jpeg', 'image/png')}`,
      ],
    ];
    for (const [args, text] of cases) {
      const r = await runCli(['files', 'upload', ...args], cliEnv(emu));
      expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(1);
      expect(r.stderr).toContain(text);
      expect(r.stderr).toContain('checked locally: nothing was uploaded or sent');
    }
    await expectNothingSent();
  });

  it('an image over 50 MB: the refusal says how big the file is, in MiB as the limit is (generate too)', async () => {
    const size = 'the file is 50.5 MiB (53,000,000 bytes); the limit is 50.0 MiB (52,428,800 bytes)';
    const upload = await runCli(['files', 'upload', file('heavy.png')], cliEnv(emu));
    expect(upload.code, upload.stderr).toBe(1);
    expect(upload.stderr).toContain(`${file('heavy.png')}: image exceeds 50 MB limit: ${size}\n`);
    const generate = await runCli(
      ['generate', '--type', 'image_edit', '--prompt', 'x', '--source', file('heavy.png')],
      cliEnv(emu),
    );
    expect(generate.code, generate.stderr).toBe(1);
    expect(generate.stderr).toContain(
      `--source ${file('heavy.png')}: source: image exceeds 50 MB limit: ${size}\n`,
    );
    await expectNothingSent();
  });

  it('sizes are labelled in binary units (KiB, MiB), with the exact bytes', async () => {
    const bytes = (await stat(file('photo.jpg'))).size;
    const r = await runCli(['files', 'upload', file('photo.jpg')], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `size: ${(bytes / 1024).toFixed(1)} KiB (${bytes.toLocaleString('en-US')} bytes)`,
    );
  });

  it('uploads a file that passes (a video too)', async () => {
    for (const path of [file('ok.png'), file('clip.mp4')]) {
      const r = await runCli(['files', 'upload', path, '--wait', '--poll-interval', '1'], cliEnv(emu));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('  ready');
    }
  });
});

describe('genpipe files upload of a file whose type its bytes do not tell', () => {
  const untold = (path: string) =>
    `${path}: the type could not be told from the file's bytes: pass it with --mime-type (an image/… or video/… type)`;

  /** The ids of every file the emulator holds, deleted ones too. */
  async function fileIds(): Promise<string[]> {
    const ids: string[] = [];
    for (const q of ['', '&state=deleted']) {
      for (const f of (await call(emu, 'GET', `/v1/files?limit=100${q}`)).body.data) ids.push(f.id);
    }
    return ids.sort();
  }

  it('says so before sending anything and names --mime-type, in either upload mode', async () => {
    const before = await fileIds();
    for (const extra of [[], ['--mode', 'presigned']]) {
      const r = await runCli(['files', 'upload', file('clip.y4m'), ...extra], cliEnv(emu));
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(untold(file('clip.y4m')));
      expect(r.stderr).toContain('checked locally: nothing was uploaded or sent');
      expect(r.stderr).not.toContain('mime_type is required');
    }
    expect(await fileIds()).toEqual(before);
  });

  it('with --mime-type, checks the bytes as that type and sends it', async () => {
    const before = await fileIds();
    const noise = await runCli(
      ['files', 'upload', file('noise.bin'), '--mime-type', 'image/png'],
      cliEnv(emu),
    );
    expect(noise.code, noise.stderr).toBe(1);
    expect(noise.stderr).toContain(`${file('noise.bin')}: image could not be decoded`);
    const pdf = await runCli(
      ['files', 'upload', file('noise.bin'), '--mime-type', 'application/pdf'],
      cliEnv(emu),
    );
    expect(pdf.code, pdf.stderr).toBe(1);
    expect(pdf.stderr).toContain(
      `${file('noise.bin')}: unknown type: application/pdf is not an image or a video`,
    );
    expect(await fileIds()).toEqual(before);

    const r = await runCli(
      [
        'files',
        'upload',
        file('clip.y4m'),
        '--mime-type',
        'video/x-yuv4mpeg',
        '--mode',
        'presigned',
        '--json',
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    const sent = JSON.parse(r.stdout);
    expect(sent.file).toMatchObject({ filename: 'clip.y4m', mime_type: 'video/x-yuv4mpeg' });
  });

  it('sends the type the check told from the first 64 KiB, beyond what a 4 KiB look tells', async () => {
    const r = await runCli(
      [
        'files',
        'upload',
        file('scan.tiff'),
        '--mode',
        'presigned',
        '--wait',
        '--poll-interval',
        '1',
        '--json',
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).file).toMatchObject({ state: 'ready', mime_type: 'image/tiff' });
  });
});

describe('genpipe generate uploads its local files with the type its check told', () => {
  it('a TIFF told from its first 64 KiB goes presigned (the inline cap is small) with its type', async () => {
    const small = await startTestEmulator({ inline_upload_max_bytes: 4096 });
    try {
      const r = await runCli(
        ['generate', '--type', 'image_edit', '--prompt', 'x', '--source', file('scan.tiff'), '--json'],
        cliEnv(small),
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain('mime_type is required');
      const files = (await call(small, 'GET', '/v1/files?limit=100')).body.data;
      expect(files).toMatchObject([{ filename: 'scan.tiff', mime_type: 'image/tiff', state: 'ready' }]);
    } finally {
      await small.close();
    }
  });
});
