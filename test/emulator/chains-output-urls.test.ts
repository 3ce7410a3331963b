/**
 * The emulator's own output URLs used as `url` media of a later generation: read from its store,
 * whatever host name the caller reached it by; an expired one reads as the storage host's 403.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import { fetchFailedDetail } from '../../src/spec/index.ts';
import { call, testConfig } from '../helpers/emulator.ts';
import { decodeImageUrl, decodeVideoUrl, firstAndLast, meanAbsDiff } from './chain-media.ts';
import { download, terminal } from './generations-helpers.ts';

const clock = new ManualClock();
let emu: RunningEmulator;
let image: { id: string };

beforeAll(async () => {
  // Only 127.0.0.1 may be fetched: URLs naming the emulator by another name are not on the list.
  emu = await startEmulator({ config: testConfig({ fetch_allow_hosts: ['127.0.0.1'] }), clock });
  const created = await call(emu, 'POST', '/v1/generations', {
    json: { type: 'image', prompt: 'a still of a pier', aspect_ratio: '16:9' },
  });
  image = await terminal(emu, created.body.id);
  expect((image as { state?: string }).state).toBe('completed');
});
afterAll(async () => {
  await emu.close();
});

/** The image's output URL as a caller that reached the emulator as `localhost` sees it. */
async function urlViaLocalhost(): Promise<string> {
  const port = new URL(emu.url).port;
  const got = await call(emu, 'GET', `/v1/generations/${image.id}`, {
    headers: { host: `localhost:${port}` },
  });
  const url = got.body.output[0].url as string;
  expect(new URL(url).hostname).toBe('localhost');
  return url;
}

function videoFrom(url: string) {
  return call(emu, 'POST', '/v1/generations', {
    json: {
      type: 'video',
      prompt: 'from the pier',
      aspect_ratio: '16:9',
      video: { resolution: '360p', start_frame: { url } },
    },
  });
}

describe('own output URLs as url media', () => {
  it('are read from the store even when their host is not in fetch_allow_hosts', async () => {
    const url = await urlViaLocalhost();
    const created = await videoFrom(url);
    expect(created.status, created.body?.detail).toBe(201);
    const done = await terminal(emu, created.body.id, undefined, 60_000);
    expect(done.state).toBe('completed');
    const out = await decodeVideoUrl(done.output[0].url.replace('localhost', '127.0.0.1'));
    const still = await decodeImageUrl(url.replace('localhost', '127.0.0.1'));
    expect(meanAbsDiff(firstAndLast(out).first, still.rgb)).toBeLessThan(12);
  });

  it('answer as the storage host would once expired: 422 failed to fetch URL (HTTP 403)', async () => {
    const url = await urlViaLocalhost();
    const local = url.replace('localhost', '127.0.0.1');
    clock.advance((emu.config.output_url_ttl_s + 1) * 1000);
    expect((await download(local)).status).toBe(403);
    for (const u of [url, local]) {
      const refused = await videoFrom(u);
      expect(refused.status).toBe(422);
      expect(refused.body.detail).toBe(fetchFailedDetail('video.start_frame', 403));
    }
  });

  it('with a signature that is not the emulator’s, are fetched like any URL (and refused off the list)', async () => {
    const url = new URL(await urlViaLocalhost());
    url.searchParams.set('sig', 'f'.repeat(64));
    const refused = await videoFrom(url.toString());
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toBe(fetchFailedDetail('video.start_frame'));
  });
});
