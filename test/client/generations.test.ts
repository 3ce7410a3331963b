/**
 * The generations resource against the emulator: create → wait → download, the local preflight (400,
 * 413, 422: nothing sent), wait's timeout and cancellation, downloads that survive an expired URL and a
 * cut transfer (Range resume) and never leave a partial file under its final name, layer names, and
 * resubmit's bounded attempts.
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  type DownloadOptions,
  type Generation,
  GenerationFailedError,
  GenerationPoller,
  type GenpipeClient,
  NotFoundError,
  PreflightError,
  preflightGeneration,
  TimeoutError,
} from '../../src/client/index.ts';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import { hold, unhold } from '../helpers/emulator.ts';
import {
  adminRows,
  clientFor,
  IMAGE,
  pngBase64,
  setFaults,
  startTestEmulator,
  stats,
  testConfig,
} from './client-helpers.ts';

let dir: string;
let emu: RunningEmulator;
let client: GenpipeClient;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-client-gen-'));
  emu = await startTestEmulator({ blocked_words: ['forbidden'] });
  client = clientFor(emu);
});

afterAll(async () => {
  await client.close();
  await emu.close();
  await rm(dir, { recursive: true, force: true });
});

async function outDir(name: string): Promise<string> {
  return mkdtemp(join(dir, `${name}-`));
}

describe('create, wait, download', () => {
  it('runs an image to completion and downloads it as output-0.png', async () => {
    const gen = await client.generations.create(IMAGE);
    expect(gen).toMatchObject({ state: 'queued', type: 'image', output: [] });
    const states: string[] = [];
    const done = await client.generations.wait(gen, { onUpdate: (g) => states.push(g.state) });
    expect(done.state).toBe('completed');
    expect(states.at(-1)).toBe('completed');
    expect(states[0]).toBe('queued');
    const target = await outDir('image');
    const progress: number[] = [];
    const files = await client.generations.download(done, target, {
      onProgress: (p) => progress.push(p.bytes),
    });
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ name: 'output-0.png', mimeType: 'image/png', type: 'image', index: 0 });
    const bytes = await readFile(join(target, 'output-0.png'));
    expect(bytes.subarray(1, 4).toString()).toBe('PNG');
    expect(bytes.length).toBe(files[0]?.bytes);
    expect(progress.at(-1)).toBe(bytes.length);
    expect(await readdir(target)).toEqual(['output-0.png']);
  });

  it('names the outputs of a layer stack layer-<index>.png', async () => {
    const gen = await client.generations.create({
      type: 'image_edit',
      prompt: 'split it into layers',
      source: { data: await pngBase64(64, 48), media_type: 'image/png' },
    });
    const done = await client.generations.wait(gen);
    expect(done.output.length).toBeGreaterThan(1);
    const target = await outDir('layers');
    const files = await client.generations.download(done.id, target);
    const expected = done.output.map((o) => `layer-${o.layer?.index}.png`);
    expect(files.map((f) => f.name)).toEqual(expected);
    expect((await readdir(target)).sort()).toEqual([...expected].sort());
  });

  it('wait gives up after timeoutMs and stops on abort', async () => {
    // Held queued: the generation cannot end before the 1 ms is up, however slow the machine.
    const slow = await hold(emu, { state: 'queued', prompt: '^a slow forbidden circle$' });
    try {
      const gen = await client.generations.create({ ...IMAGE, prompt: 'a slow forbidden circle' });
      const late = await client.generations.wait(gen, { timeoutMs: 1 }).catch((e) => e);
      expect(late).toBeInstanceOf(TimeoutError);
      const controller = new AbortController();
      const waiting = client.generations.wait(gen.id, { signal: controller.signal });
      controller.abort();
      await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    } finally {
      await unhold(emu, slow);
    }
  });

  it("wait's poll loop reads at once with readNow and numbers its waits for an interval function", async () => {
    const gen = await client.generations.create(IMAGE);
    const waits: number[] = [];
    const reads: string[] = [];
    const poller = new GenerationPoller({
      get: (id, o) => client.generations.get(id, o),
      intervalMs: (n) => {
        waits.push(n);
        return 5;
      },
    });
    const done = await poller.wait(gen.id, { readNow: true, onRead: (g) => void reads.push(g.state) });
    expect(done.state).toBe('completed');
    expect(reads.at(-1)).toBe('completed');
    // No wait before the first read, one after each read that found the job still running.
    expect(waits).toEqual(reads.slice(0, -1).map((_, i) => i));
  });

  it('refuses to download a generation that has not completed', async () => {
    const gen = await client.generations.create({ ...IMAGE, prompt: 'a forbidden square' });
    const failed = await client.generations.wait(gen, { throwOnFailure: false });
    expect(failed.state).toBe('failed');
    await expect(client.generations.download(failed, await outDir('none'))).rejects.toThrow(/state failed/);
  });
});

describe('preflight: nothing is sent when the answer is certain', () => {
  async function expectNothingSent(
    fn: () => Promise<unknown>,
    status: number,
    detail: string,
  ): Promise<void> {
    const before = (await stats(emu)).responses;
    const err = await fn().catch((e) => e);
    expect(err).toBeInstanceOf(PreflightError);
    expect(err).toMatchObject({ status, detail });
    expect((await stats(emu)).responses).toEqual({ ...before, 200: (before['200'] ?? 0) + 1 });
  }

  it('400 and 422 carry the service’s exact detail', async () => {
    await expectNothingSent(
      () => client.generations.create({ type: 'video', prompt: 'x', video: { duration: '10s', hdr: true } }),
      400,
      "duration '10s' is not supported with hdr=true",
    );
    await expectNothingSent(
      () => client.generations.create({ prompt: 'x', aspect_ratio: '16:9', style: 'manga' }),
      422,
      "aspect_ratio='16:9' is not allowed when style='manga'. Valid aspect_ratio: 1:2, 1:3, 2:3, 9:16",
    );
  });

  it('413 for inline data over 50 MB when nothing else could fail first', async () => {
    const head = Buffer.from(await pngBase64(8, 8), 'base64');
    const big = Buffer.alloc(50 * 1024 * 1024 + 10);
    head.copy(big);
    const data = big.toString('base64');
    await expectNothingSent(
      () =>
        client.generations.create({
          type: 'image_edit',
          prompt: 'x',
          source: { data, media_type: 'image/png' },
        }),
      413,
      'source: image exceeds 50 MB limit',
    );
    // With a url reference beside it the service could answer something else first: not claimed.
    await expect(
      preflightGeneration({
        type: 'image_edit',
        prompt: 'x',
        source: { data, media_type: 'image/png' },
        image_ref: [{ url: 'http://127.0.0.1:9/ref.png' }],
      }),
    ).resolves.toMatchObject({ type: 'image_edit' });
  });
});

describe('downloads that survive', () => {
  it('re-reads the generation for fresh URLs after they expired (403)', async () => {
    // The emulator's clock moves only when the test says so: the URL the client holds expires at once,
    // and the fresh one stays valid however long the download takes to start.
    const clock = new ManualClock();
    const short = await startEmulator({ config: testConfig({ output_url_ttl_s: 1 }), clock });
    const logs: string[] = [];
    const c = clientFor(short, { hooks: { log: (m) => logs.push(m) } });
    try {
      const done = await c.generations.wait(await c.generations.create(IMAGE));
      const expires = Number(new URL(done.output[0]?.url as string).searchParams.get('expires'));
      clock.advance(Math.max(0, expires * 1000 - clock.now()) + 1000);
      const target = await outDir('expired');
      const files = await c.generations.download(done, target);
      expect(files[0]?.name).toBe('output-0.png');
      expect((await readFile(join(target, 'output-0.png'))).length).toBe(files[0]?.bytes);
      expect(await readdir(target)).toEqual(['output-0.png']);
      expect(logs.filter((l) => l.includes('URL expired')).length).toBeGreaterThanOrEqual(1);
    } finally {
      await c.close();
      await short.close();
    }
  });

  describe('against a storage host that cuts transfers', () => {
    const payload = Buffer.from(Array.from({ length: 1_000_000 }, (_, i) => (i * 7) % 251));
    let server: Server;
    let base: string;
    const seen: IncomingHttpHeaders[] = [];
    /**
     * How the next GETs are answered: 'cut' sends all but the last byte and drops the connection when
     * `cutting` says so; 'ranges' honours Range.
     */
    let script: Array<'cut' | 'ranges' | 'full' | 'missing'> = [];
    /** Drops the open 'cut' answer's connection; null when none is open. */
    let cut: (() => void) | null = null;
    /**
     * Download options that cut a 'cut' answer on the first progress event after some of it reached the
     * .part file in `dir`, so the client always has bytes to resume from. While the client reads the
     * answer its writes reach the file (its stream buffers hold far less than the answer), so the cut
     * always comes.
     */
    function cutting(dir: string): DownloadOptions {
      return {
        onProgress: ({ name }) => {
          if (cut && statSync(join(dir, `${name}.part`), { throwIfNoEntry: false })?.size) cut();
        },
      };
    }

    beforeAll(async () => {
      server = createServer((req, res) => {
        seen.push(req.headers);
        const step = script.shift() ?? 'missing';
        if (step === 'missing')
          return res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"gone"}');
        const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
        if (step === 'ranges' && range) {
          const start = Number(range[1]);
          res.writeHead(206, {
            'content-type': 'image/png',
            'content-length': payload.length - start,
            'content-range': `bytes ${start}-${payload.length - 1}/${payload.length}`,
          });
          return res.end(payload.subarray(start));
        }
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': payload.length });
        if (step === 'cut') {
          cut = () => {
            cut = null;
            res.socket?.destroy();
          };
          res.write(payload.subarray(0, payload.length - 1));
          return;
        }
        res.end(payload);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      await new Promise((r) => server.close(r));
    });

    function generationAt(path: string): Generation {
      return {
        id: '00000000-0000-4000-8000-00000000d0d0',
        type: 'image',
        state: 'completed',
        model: 'uni-1',
        created_at: new Date().toISOString(),
        output: [{ type: 'image', url: `${base}${path}?sig=secret-signature`, layer: null }],
        failure_reason: null,
        failure_code: null,
      };
    }

    it('resumes a cut transfer with Range and keeps the bytes exact', async () => {
      seen.length = 0;
      script = ['cut', 'ranges'];
      const target = await outDir('resume');
      const files = await client.generations.download(generationAt('/out/0'), target, cutting(target));
      const got = await readFile(join(target, 'output-0.png'));
      expect(createHash('sha256').update(got).digest('hex')).toBe(
        createHash('sha256').update(payload).digest('hex'),
      );
      expect(files[0]?.bytes).toBe(payload.length);
      expect(seen).toHaveLength(2);
      expect(seen[1]?.range).toMatch(/^bytes=\d+-$/);
      expect(Number(/\d+/.exec(seen[1]?.range as string)?.[0])).toBeGreaterThan(0);
      // No Authorization header ever goes to a storage host.
      for (const h of seen) expect(h.authorization).toBeUndefined();
      expect(await readdir(target)).toEqual(['output-0.png']);
    });

    it('starts over when the server ignores Range', async () => {
      script = ['cut', 'full'];
      const target = await outDir('restart');
      await client.generations.download(generationAt('/out/0'), target, cutting(target));
      expect((await readFile(join(target, 'output-0.png'))).equals(payload)).toBe(true);
    });

    it('leaves neither a final nor a .part file when the transfer keeps failing', async () => {
      script = ['cut', 'cut', 'cut', 'cut', 'cut'];
      const target = await outDir('broken');
      const c = clientFor(emu, { maxRetries: 2 });
      const err = await c.generations
        .download(generationAt('/out/0'), target, cutting(target))
        .catch((e) => e);
      await c.close();
      expect(err).toBeInstanceOf(ConnectionError);
      expect(String(err)).not.toContain('secret-signature');
      expect(await readdir(target)).toEqual([]);
      script = ['missing'];
      const gone = await client.generations.download(generationAt('/out/0'), target).catch((e) => e);
      expect(gone).toBeInstanceOf(NotFoundError);
      expect(existsSync(join(target, 'output-0.png'))).toBe(false);
    });
  });
});

describe('resubmit', () => {
  it('resubmits a retryable failure up to maxAttempts creates, then throws the last failure', async () => {
    const before = (await adminRows(emu)).length;
    const resubmits: number[] = [];
    await setFaults(emu, { failure_codes: { generation_failed: 1 } });
    try {
      const err = await client.generations
        .resubmit(IMAGE, { maxAttempts: 3, onResubmit: (i) => void resubmits.push(i.attempt) })
        .catch((e) => e);
      expect(err).toBeInstanceOf(GenerationFailedError);
      expect(err).toMatchObject({ failureCode: 'generation_failed', retryable: true });
    } finally {
      await setFaults(emu, {});
    }
    expect(resubmits).toEqual([1, 2]);
    expect((await adminRows(emu)).length - before).toBe(3);
  });

  it('does not resubmit a failure the interface calls final', async () => {
    const before = (await adminRows(emu)).length;
    const err = await client.generations
      .resubmit({ ...IMAGE, prompt: 'a forbidden shape' }, { maxAttempts: 3 })
      .catch((e) => e);
    expect(err).toMatchObject({ failureCode: 'content_moderated', retryable: false });
    expect((await adminRows(emu)).length - before).toBe(1);
  });

  it('returns the completed generation once a resubmission succeeds', async () => {
    await setFaults(emu, { failure_codes: { output_not_found: 1 } });
    try {
      const done = await client.generations.resubmit(IMAGE, {
        maxAttempts: 3,
        onResubmit: () => setFaults(emu, {}),
      });
      expect(done.state).toBe('completed');
    } finally {
      await setFaults(emu, {});
    }
  });
});
