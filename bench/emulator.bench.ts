/**
 * Emulator benches (issue 2):
 * 1. GET /v1/generations/{id} throughput under autocannon, and as a ratio to a bare fastify server
 *    answering the same-sized JSON on the same machine in the same run (target >= 5,000 req/s).
 * 2. The emulator's memory growth while a 1 GiB presigned PUT streams in (target < 64 MB).
 * Each server runs in its own child process so the load generator does not share its event loop.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import autocannon from 'autocannon';
import { request } from 'undici';
import {
  type BenchRow,
  type ChildEmulator,
  MB,
  ROOT,
  rssBytes,
  sampleRss,
  spawnEmulator,
  writeEmulatorConfig,
} from './lib.ts';

const KEY = 'svc-api-bench-key';
const DURATION_S = Number(process.env.BENCH_GET_SECONDS ?? 5);
const UPLOAD_BYTES = Number(process.env.BENCH_UPLOAD_BYTES ?? 1024 * MB);

function writeConfig(dir: string): string {
  return writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 100000, concurrency: 100, balance: 1e9 },
    { queue_ms: 10, processing_ms: { image: 10, video: 10 }, abuse_ceiling: 1e12 },
  );
}

// biome-ignore lint/suspicious/noExplicitAny: bench reads response bodies loosely
async function json(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: method as 'GET',
    headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

async function completedGeneration(emu: ChildEmulator): Promise<string> {
  const created = await json(`${emu.url}/v1/generations`, 'POST', {
    type: 'image',
    model: 'uni-1',
    prompt: 'bench',
  });
  if (created.status !== 201)
    throw new Error(`create failed: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  for (let i = 0; i < 600; i++) {
    const g = await json(`${emu.url}/v1/generations/${id}`, 'GET');
    if (g.body.state === 'completed') return id;
    if (g.body.state === 'failed') throw new Error(`generation failed: ${g.body.failure_reason}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('generation did not complete');
}

async function cannon(url: string): Promise<{ rps: number; errors: number; non2xx: number; p99: number }> {
  const result = await autocannon({
    url,
    connections: 16,
    pipelining: 1,
    duration: DURATION_S,
    headers: { authorization: `Bearer ${KEY}` },
  });
  return {
    rps: result.requests.average,
    errors: result.errors,
    non2xx: result.non2xx,
    p99: result.latency.p99,
  };
}

async function spawnBare(): Promise<ChildEmulator> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin', 'run-ts.js'), join(ROOT, 'bench', 'fixtures', 'bare-server.ts')],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d) => {
      out += String(d);
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (c) => reject(new Error(`bare server exited ${c}`)));
  });
  return {
    url,
    pid: child.pid ?? 0,
    child,
    stop: () =>
      new Promise((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

export async function benchGetThroughput(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-'));
  const emu = await spawnEmulator(writeConfig(dir), join(dir, 'data'));
  const bare = await spawnBare();
  try {
    const id = await completedGeneration(emu);
    // Warm both up briefly so JIT state is comparable, then measure.
    await autocannon({ url: `${bare.url}/v1/generations/${id}`, connections: 4, duration: 1 });
    const baseline = await cannon(`${bare.url}/v1/generations/${id}`);
    await autocannon({
      url: `${emu.url}/v1/generations/${id}`,
      connections: 4,
      duration: 1,
      headers: { authorization: `Bearer ${KEY}` },
    });
    const measured = await cannon(`${emu.url}/v1/generations/${id}`);
    const ratio = measured.rps / baseline.rps;
    return {
      rows: [
        {
          bench: 'emulator GET',
          metric: 'req/s',
          value: Math.round(measured.rps),
          unit: 'req/s',
          target: '>= 5000',
          pass: measured.rps >= 5000,
        },
        {
          bench: 'emulator GET',
          metric: 'ratio to bare fastify',
          value: ratio,
          unit: 'x',
          target: '',
          pass: undefined,
        },
        {
          bench: 'emulator GET',
          metric: 'non-2xx + errors',
          value: measured.non2xx + measured.errors,
          unit: 'count',
          target: '0',
          pass: measured.non2xx + measured.errors === 0,
        },
        { bench: 'emulator GET', metric: 'p99 latency', value: measured.p99, unit: 'ms' },
      ],
      data: { measured, baseline, ratio, duration_s: DURATION_S, connections: 16 },
    };
  } finally {
    await emu.stop();
    await bare.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A stream of `total` bytes made from one reused 1 MiB chunk: no memory of its own grows. */
function zeroStream(total: number): Readable {
  const chunk = Buffer.alloc(MB, 7);
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= total) return this.push(null);
      const n = Math.min(chunk.length, total - sent);
      sent += n;
      this.push(n === chunk.length ? chunk : chunk.subarray(0, n));
    },
  });
}

export async function benchPresignedUploadMemory(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-'));
  const emu = await spawnEmulator(writeConfig(dir), join(dir, 'data'));
  try {
    const created = await json(`${emu.url}/v1/files`, 'POST', {
      mime_type: 'video/mp4',
      size_bytes: UPLOAD_BYTES,
      filename: 'big.mp4',
      purpose: 'input',
    });
    if (created.status !== 201)
      throw new Error(`presign failed: ${created.status} ${JSON.stringify(created.body)}`);
    const upload = created.body.upload as { url: string; headers?: Record<string, string> };
    await new Promise((r) => setTimeout(r, 300));
    const before = rssBytes(emu.pid);
    const sampler = sampleRss(emu.pid);
    const t0 = performance.now();
    const res = await request(upload.url, {
      method: 'PUT',
      headers: { ...upload.headers, 'content-length': String(UPLOAD_BYTES) },
      body: zeroStream(UPLOAD_BYTES),
    });
    await res.body.text();
    const seconds = (performance.now() - t0) / 1000;
    const { peak, samples } = sampler.stop();
    if (res.statusCode >= 300) throw new Error(`PUT failed with ${res.statusCode}`);
    const growth = (peak - before) / MB;
    return {
      rows: [
        {
          bench: 'emulator presigned PUT',
          metric: 'RSS growth',
          value: growth,
          unit: 'MB',
          target: '< 64',
          pass: growth < 64,
        },
        {
          bench: 'emulator presigned PUT',
          metric: 'throughput',
          value: UPLOAD_BYTES / MB / seconds,
          unit: 'MB/s',
        },
      ],
      data: { bytes: UPLOAD_BYTES, rss_before: before, rss_peak: peak, growth_mb: growth, seconds, samples },
    };
  } finally {
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
