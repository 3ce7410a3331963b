/**
 * The local media check of `genpipe generate` (its local `--source` / `--image-ref` files) and `genpipe
 * files upload`, as a user runs them: child processes against an emulator on loopback. A file the
 * service would refuse, or that would turn `failed` once uploaded, is refused before anything is
 * uploaded or sent (the emulator holds no file and no generation afterwards), with exit 1 and a message
 * naming the file and the rule — the service's own detail text where it has one.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
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
  await makeImage(file('photo.jpg'), { width: 320, height: 240 });
  await truncated(file('photo.jpg'), file('cut.jpg'), 0.5);
  await writeFile(file('empty.png'), '');
  await writeFile(file('notes.png'), 'just some words, not an image');
  await makeVideo(file('long.mp4'), { seconds: 31, fps: 2, width: 64, height: 36 });
  await makeVideo(file('clip.mp4'), { seconds: 1, fps: 5, width: 64, height: 36 });
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

  it('uploads a file that passes (a video too)', async () => {
    for (const path of [file('ok.png'), file('clip.mp4')]) {
      const r = await runCli(['files', 'upload', path, '--wait', '--poll-interval', '1'], cliEnv(emu));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('  ready');
    }
  });
});
