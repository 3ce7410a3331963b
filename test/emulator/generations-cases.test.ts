/**
 * The shared case table of POST /v1/generations (test/cases/generation-cases.ts) over real HTTP: every
 * rejection row answers its status and exact detail without rate-limit headers, and every valid body
 * answers 201 with them. Rows about resolved media facts (`media`) run with real bytes where those are
 * cheap to make (tall or wide PNGs, long tiny videos); the over-50 MB rows are covered once with a real
 * url in generations-media-refs.test.ts, and a generated video is never longer than 10 s, so the
 * generation_id duration row cannot happen over HTTP. Jobs are held queued: nothing renders.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { GENERATION_CASES, VALID_BODIES } from '../cases/generation-cases.ts';
import { call, hold, startTestEmulator, testConfig } from '../helpers/emulator.ts';
import { png, tinyMp4 } from './generations-helpers.ts';

let emu: RunningEmulator;
beforeAll(async () => {
  const clients = (testConfig().clients as Array<Record<string, unknown>>).map((c) => ({
    ...c,
    rpm: 100_000,
    concurrency: 100_000,
  }));
  emu = await startTestEmulator({ clients });
  await hold(emu, { state: 'queued' });
});
afterAll(async () => {
  await emu.close();
});

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];

describe('rejection rows over HTTP', () => {
  const rows = GENERATION_CASES.filter((c) => c.media === undefined);
  it('has rows to run', () => {
    expect(rows.length).toBeGreaterThan(50);
  });
  for (const [i, row] of rows.entries()) {
    it(`#${i} ${row.name} → ${row.status}`, async () => {
      const r = await call(emu, 'POST', '/v1/generations', { json: row.body });
      expect({ status: r.status, body: r.body }).toEqual({
        status: row.status,
        body: { detail: row.detail },
      });
      for (const h of RATE_HEADERS) expect(r.headers[h]).toBeUndefined();
    });
  }
});

/** Real inline media standing in for the facts of a row. */
async function pngRef(width: number, height: number) {
  return { data: (await png(width, height)).toString('base64'), media_type: 'image/png' };
}
async function mp4Ref(seconds: number) {
  return { data: (await tinyMp4(seconds, 2)).toString('base64'), media_type: 'video/mp4' };
}

/** For each media row that can run over HTTP: the body with real bytes at the sites that matter. */
type Body = Record<string, unknown> & { video?: Record<string, unknown> };

const REAL_MEDIA: Record<string, (body: Body) => Promise<unknown>> = {
  'image_ref entry wider than 8000 px': async (b) => ({ ...b, image_ref: [await pngRef(8001, 600)] }),
  'video.end_frame taller than 8000 px': async (b) => ({
    ...b,
    video: { ...b.video, end_frame: await pngRef(640, 9000) },
  }),
  'order: 413 bytes before pixels, first site first': async (b) => ({ ...b, source: await pngRef(9000, 10) }),
  'order: 422 manga before 413': async (b) => b,
  'video_reframe source longer than 30 s (choice text)': async (b) => ({ ...b, source: await mp4Ref(31.5) }),
  'video_edit source longer than 18 s with video.edit (choice text)': async (b) => ({
    ...b,
    source: await mp4Ref(18.5),
  }),
};

describe('media rows with real bytes over HTTP', () => {
  const rows = GENERATION_CASES.filter((c) => c.media !== undefined && REAL_MEDIA[c.name]);
  it('finds every row it knows in the table', () => {
    expect(rows.map((r) => r.name).sort()).toEqual(Object.keys(REAL_MEDIA).sort());
  });
  for (const row of rows) {
    it(`${row.name} → ${row.status}`, async () => {
      const body = await REAL_MEDIA[row.name]!(row.body as Body);
      const r = await call(emu, 'POST', '/v1/generations', { json: body });
      expect({ status: r.status, body: r.body }).toEqual({
        status: row.status,
        body: { detail: row.detail },
      });
      for (const h of RATE_HEADERS) expect(r.headers[h]).toBeUndefined();
    });
  }
});

describe('valid bodies over HTTP', () => {
  for (const [type, bodies] of Object.entries(VALID_BODIES)) {
    for (const { name, body } of bodies) {
      it(`${type}: ${name} → 201`, async () => {
        const r = await call(emu, 'POST', '/v1/generations', { json: body });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        expect(r.body).toMatchObject({ type, state: 'queued', output: [] });
        expect(r.headers['x-ratelimit-limit']).toBe('100000');
      });
    }
  }
});
