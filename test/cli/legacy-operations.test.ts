/**
 * `genpipe legacy` beyond modify/get, as a user runs them against an emulator on loopback: each create
 * waits and downloads a real file of its kind with --out; a request the service would refuse is refused
 * locally with the spec's detail and nothing is sent; list and delete agree; concepts and credits.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { probeVideo } from '../../src/media/index.ts';
import { LEGACY_CONCEPTS, validateImageRequest, validateReframeVideoRequest } from '../../src/spec/index.ts';
import { adminRows } from '../client/client-helpers.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-legacy-ops-'));
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

const POLL = ['--poll-interval', '1', '--json'];

/** Runs a legacy create with --out, checks exit 0 and one saved file; its path and the generation. */
async function created(args: string[]): Promise<{ path: string; id: string; generation: { id: string } }> {
  const out = join(dir, 'out');
  const r = await runCli(['legacy', ...args, '--out', out, ...POLL], cliEnv(emu), 60_000);
  expect(r.code, r.stderr).toBe(0);
  const result = jsonOut(r);
  expect(result.generation.state).toBe('completed');
  expect(result.outputs).toHaveLength(1);
  return { path: result.outputs[0].path, id: result.generation.id, generation: result.generation };
}

function magic(path: string): string {
  return readFileSync(path).subarray(0, 4).toString('hex');
}

describe('genpipe legacy creates', () => {
  it('generate-image, reframe-image, generate-video, reframe-video, upscale and add-audio wait and download their files', async () => {
    const image = await created(['generate-image', '--prompt', 'a red fox', '--format', 'png', '--sync']);
    expect(image.path).toMatch(/output-0\.png$/);
    expect(magic(image.path)).toBe('89504e47');
    const imageUrl = (await runCli(['legacy', 'get', image.id, '--json'], cliEnv(emu))).stdout;
    const imageUrlOf: string = JSON.parse(imageUrl).assets.image;
    const reframedImage = await created([
      ...['reframe-image', '--media-url', imageUrlOf],
      ...['--aspect-ratio', '9:16', '--model', 'photon-flash-1'],
    ]);
    expect(magic(reframedImage.path).slice(0, 4)).toBe('ffd8');

    const request = join(dir, 'video.json');
    await writeFile(request, JSON.stringify({ prompt: 'a lighthouse', duration: '1s', model: 'ray-2' }));
    const video = await created([
      ...['generate-video', '--request', request, '--model', 'ray-flash-2', '--resolution', '360p'],
    ]);
    expect(video.generation).toMatchObject({ model: 'ray-flash-2', request: { prompt: 'a lighthouse' } });
    expect((await probeVideo(video.path)).codec).toBe('h264');
    const videoUrl = JSON.parse((await runCli(['legacy', 'get', video.id, '--json'], cliEnv(emu))).stdout)
      .assets.video;

    const extend = await runCli(
      [
        ...['legacy', 'generate-video', '--frame0', `generation:${video.id}`, '--concept', 'zoom_in'],
        ...['--concept', 'pan_left', '--frame1', imageUrlOf, '--json'],
      ],
      cliEnv(emu),
    );
    expect(extend.code, extend.stderr).toBe(0);
    expect(jsonOut(extend).generation.request).toMatchObject({
      keyframes: { frame0: { type: 'generation', id: video.id }, frame1: { type: 'image', url: imageUrlOf } },
      concepts: [{ key: 'zoom_in' }, { key: 'pan_left' }],
    });

    const square = await created([
      ...['reframe-video', '--media-url', videoUrl, '--aspect-ratio', '1:1', '--model', 'ray-flash-2'],
    ]);
    const sq = await probeVideo(square.path);
    expect(sq.width).toBe(sq.height);
    const upscaled = await created(['upscale', video.id, '--resolution', '540p']);
    expect(Math.min((await probeVideo(upscaled.path)).width, (await probeVideo(upscaled.path)).height)).toBe(
      540,
    );
    const voiced = await created(['add-audio', video.id, '--prompt', 'waves']);
    expect((await probeVideo(voiced.path)).codec).toBe('h264');

    const list = await runCli(['legacy', 'list', '--limit', '2', '--json'], cliEnv(emu));
    expect(list.code, list.stderr).toBe(0);
    expect(jsonOut(list).generations.map((g: { id: string }) => g.id)).toEqual([voiced.id, upscaled.id]);
    const del = await runCli(['legacy', 'delete', voiced.id], cliEnv(emu));
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout).toContain(`deleted legacy generation ${voiced.id}`);
    const after = await runCli(['legacy', 'list', '--limit', '1'], cliEnv(emu));
    expect(after.stdout).toMatch(new RegExp(`^${upscaled.id}  video  completed`));
    const gone = await runCli(['legacy', 'get', voiced.id], cliEnv(emu));
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('HTTP 404');
  });

  it('a request the service would refuse is refused locally with its detail (exit 1), nothing sent; bad flags exit 2', async () => {
    const before = (await adminRows(emu)).length;
    const image = await runCli(['legacy', 'generate-image', '--prompt', 'x', '--format', 'gif'], cliEnv(emu));
    expect(image.code).toBe(1);
    const expected = validateImageRequest({ prompt: 'x', format: 'gif' });
    expect(image.stderr).toContain((expected as { detail: string }).detail);
    const reframe = await runCli(['legacy', 'reframe-video', '--aspect-ratio', '1:1'], cliEnv(emu));
    expect(reframe.code).toBe(1);
    const missing = validateReframeVideoRequest({ aspect_ratio: '1:1' });
    expect(reframe.stderr).toContain((missing as { detail: string }).detail);
    expect((await adminRows(emu)).length).toBe(before);

    const limit = await runCli(['legacy', 'list', '--limit', '0'], cliEnv(emu));
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit');
    const id = await runCli(['legacy', 'upscale', 'not-an-id'], cliEnv(emu));
    expect(id.code).toBe(2);
  });

  it('concepts and credits', async () => {
    const concepts = await runCli(['legacy', 'concepts'], cliEnv(emu));
    expect(concepts.stdout.trim().split('\n')).toEqual([...LEGACY_CONCEPTS]);
    const credits = await runCli(['legacy', 'credits', '--json'], cliEnv(emu));
    expect(credits.code, credits.stderr).toBe(0);
    expect(jsonOut(credits).credit_balance).toBeGreaterThan(0);
  });
});
