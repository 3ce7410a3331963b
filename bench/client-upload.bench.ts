/**
 * Client bench (issue 3): `genpipe files upload --mode presigned` of a 1 GiB file to an emulator in
 * its own process.
 * - peak RSS of the CLI process, sampled from /proc (target < 120 MB);
 * - throughput as a ratio to `curl --upload-file` of the same file to a fresh presigned URL of the same
 *   emulator (target >= 0.95). The CLI is timed end to end, as a user sees it: process start, POST
 *   /v1/files, the PUT (sha256 on the way), POST complete and exit. curl is timed for its PUT alone.
 *   Also reported, not judged: the ratio for the upload call alone (the CLI's own `elapsed_ms`, which
 *   leaves out process start-up), and the RSS of an idle CLI run (`files list`) to read the peak by.
 * Each is run twice, alternating, and the better run of each is kept.
 *
 * Then `genpipe run` over a folder of RUN_FILES videos of RUN_FILE_BYTES each (a video_reframe rule,
 * `upload: presigned`), as a whole process, against curl PUTting the same files one after the other
 * (target: curl's total time / genpipe's wall time >= 0.95; genpipe's peak RSS < 120 MB).
 * BENCH_CLIENT_UPLOAD_RUN=0 skips it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { runFfmpeg } from '../src/media/index.ts';
import {
  type BenchRow,
  type ChildEmulator,
  MB,
  ROOT,
  sampleRss,
  spawnEmulator,
  writeEmulatorConfig,
} from './lib.ts';

const KEY = 'svc-api-bench-client-key';
const BYTES = Number(process.env.BENCH_CLIENT_UPLOAD_BYTES ?? 1024 * MB);
const RUNS = 4;
const RUN_FILES = 4;
const RUN_FILE_BYTES = Number(process.env.BENCH_CLIENT_UPLOAD_RUN_BYTES ?? 256 * MB);
const RATIO_TARGET = 0.95;
const RSS_TARGET_MB = 120;
const RUN_RECIPE =
  'rules:\n  - match: "*.mp4"\n    input_as: source\n    upload: presigned\n    request: { type: video_reframe, model: ray-3.2, prompt: "keep the subject", aspect_ratio: "9:16" }\n';
const MIME = 'video/mp4';

function writeConfig(dir: string): string {
  return writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 100000, concurrency: 100, balance: 1e9 },
    { queue_ms: 10, processing_ms: { image: 10, video: 10 }, tiny_outputs: true },
  );
}

/**
 * Writes a real video of exactly `bytes` bytes, so that it passes the CLI's local check as a user's
 * would: a one-second faststart MP4 followed by a `free` box that fills the rest with real bytes (one
 * random 1 MiB chunk, reused, so no page of the file is sparse). ffprobe reads it; its box chain ends
 * where the file ends.
 */
async function writeBigFile(path: string, bytes: number): Promise<void> {
  const clip = `${path}.clip.mp4`;
  await runFfmpeg([
    ...['-f', 'lavfi', '-i', 'testsrc2=size=64x48:rate=10:duration=1'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', clip],
  ]);
  const video = readFileSync(clip);
  rmSync(clip);
  const rest = bytes - video.length;
  const large = rest > 0xffffffff;
  const header = Buffer.alloc(large ? 16 : 8);
  header.writeUInt32BE(large ? 1 : rest, 0);
  header.write('free', 4, 'latin1');
  if (large) header.writeBigUInt64BE(BigInt(rest), 8);
  const chunk = randomBytes(MB);
  const out = createWriteStream(path);
  out.write(video);
  out.write(header);
  for (let left = rest - header.length; left > 0; left -= chunk.length) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    if (!out.write(piece)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

// biome-ignore lint/suspicious/noExplicitAny: bench reads response bodies loosely
async function api(emu: ChildEmulator, method: string, path: string, body?: unknown): Promise<any> {
  const res = await request(`${emu.url}${path}`, {
    method: method as 'GET',
    headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text}`);
  return text ? JSON.parse(text) : null;
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('close', (code) => resolve(code));
  });
}

interface CliRun {
  seconds: number;
  /** The upload call alone, as the CLI reports it. */
  callSeconds: number;
  peakRss: number;
  samples: number;
}

function cliEnv(emu: ChildEmulator): NodeJS.ProcessEnv {
  return { ...process.env, GENPIPE_API_KEY: KEY, GENPIPE_BASE_URL: emu.url };
}

/** Peak RSS of a CLI run that moves no bytes to speak of (`files list`): the CLI's own floor. */
async function idleCliRss(emu: ChildEmulator): Promise<number> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin', 'genpipe.js'), 'files', 'list', '--json', '--quiet'],
    {
      env: cliEnv(emu),
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const sampler = sampleRss(child.pid ?? 0, 10);
  const code = await exited(child);
  const { peak } = sampler.stop();
  if (code !== 0) throw new Error(`genpipe files list exited ${code}`);
  return peak;
}

async function runCli(emu: ChildEmulator, file: string): Promise<CliRun> {
  const env = cliEnv(emu);
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin', 'genpipe.js'),
      'files',
      'upload',
      file,
      '--mode',
      'presigned',
      '--mime-type',
      MIME,
      '--json',
      '--quiet',
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const sampler = sampleRss(child.pid ?? 0, 10);
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += String(d);
  });
  child.stderr?.on('data', (d) => {
    err += String(d);
  });
  const code = await exited(child);
  const seconds = (performance.now() - t0) / 1000;
  const { peak, samples } = sampler.stop();
  if (code !== 0) throw new Error(`genpipe files upload exited ${code}: ${err}`);
  const result = JSON.parse(out) as { bytes: number; file: { id: string }; elapsed_ms: number };
  if (result.bytes !== BYTES) throw new Error(`uploaded ${result.bytes} bytes, expected ${BYTES}`);
  await api(emu, 'DELETE', `/v1/files/${result.file.id}`); // frees the stored copy
  return { seconds, callSeconds: result.elapsed_ms / 1000, peakRss: peak, samples };
}

async function runCurl(emu: ChildEmulator, file: string, bytes = BYTES): Promise<number> {
  const created = await api(emu, 'POST', '/v1/files', {
    mime_type: MIME,
    size_bytes: bytes,
    filename: 'big.bin',
  });
  const upload = created.upload as { url: string; method: string; headers?: Record<string, string> };
  const headerArgs = Object.entries(upload.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  const t0 = performance.now();
  const child = spawn(
    'curl',
    [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-X',
      upload.method ?? 'PUT',
      ...headerArgs,
      '--upload-file',
      file,
      upload.url,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += String(d);
  });
  child.stderr?.on('data', (d) => {
    err += String(d);
  });
  const code = await exited(child);
  const seconds = (performance.now() - t0) / 1000;
  if (code !== 0 || !out.startsWith('2')) throw new Error(`curl exited ${code} with HTTP ${out}: ${err}`);
  await api(emu, 'DELETE', `/v1/files/${created.id}`);
  return seconds;
}

/**
 * Puts the machine back in the same state before a timed upload: the emulator's stored uploads are
 * deleted (a soft delete removes the bytes at once) and dirty pages are flushed, so no run pays for
 * the previous gigabyte's writeback or for a fuller disk.
 */
async function settle(emu: ChildEmulator): Promise<void> {
  for (const state of ['pending', 'ready', 'failed']) {
    const list = await api(emu, 'GET', `/v1/files?state=${state}&limit=100`);
    for (const f of list.data as Array<{ id: string }>) await api(emu, 'DELETE', `/v1/files/${f.id}`);
  }
  execFileSync('sync');
}

/** `genpipe run` over `folder` as a whole process: its wall time and peak RSS. */
async function runFolder(
  emu: ChildEmulator,
  folder: string,
  out: string,
): Promise<{ seconds: number; peakRss: number }> {
  rmSync(out, { recursive: true, force: true });
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin', 'genpipe.js'), 'run', folder, '--out', out, '-q'],
    {
      env: cliEnv(emu),
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr?.on('data', (d) => {
    err += String(d);
  });
  const sampler = sampleRss(child.pid ?? 0, 10);
  const code = await exited(child);
  const seconds = (performance.now() - t0) / 1000;
  const { peak } = sampler.stop();
  if (code !== 0) throw new Error(`genpipe run exited ${code}: ${err.slice(-2000)}`);
  return { seconds, peakRss: peak };
}

/**
 * The folder case: RUN_FILES videos through `genpipe run` against curl PUTting them one after the
 * other, each side twice, alternating; the better run of each kept.
 */
async function benchRunFolder(emu: ChildEmulator, dir: string): Promise<{ rows: BenchRow[]; data: unknown }> {
  const folder = join(dir, 'videos');
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'genpipe.yaml'), RUN_RECIPE);
  const files: string[] = [];
  for (let i = 0; i < RUN_FILES; i++) {
    const f = join(folder, `clip-${i}.mp4`);
    await writeBigFile(f, RUN_FILE_BYTES);
    files.push(f);
  }
  const runs: Array<{ seconds: number; peakRss: number }> = [];
  const curls: number[] = [];
  for (let i = 0; i < 2; i++) {
    const curlEach = async () => {
      await settle(emu);
      let total = 0;
      for (const f of files) total += await runCurl(emu, f, RUN_FILE_BYTES);
      curls.push(total);
    };
    if (i % 2 === 1) await curlEach();
    await settle(emu);
    runs.push(await runFolder(emu, folder, join(dir, 'run-out')));
    if (i % 2 === 0) await curlEach();
  }
  const best = Math.min(...runs.map((r) => r.seconds));
  const bestCurl = Math.min(...curls);
  const peak = Math.min(...runs.map((r) => r.peakRss)) / MB;
  const ratio = bestCurl / best;
  const name = `genpipe run (${RUN_FILES} x ${Math.round(RUN_FILE_BYTES / MB)} MiB videos, presigned)`;
  return {
    rows: [
      {
        bench: name,
        metric: 'curl one after the other / genpipe run wall',
        value: ratio,
        unit: 'x',
        target: `>= ${RATIO_TARGET}`,
        pass: ratio >= RATIO_TARGET,
      },
      {
        bench: name,
        metric: 'genpipe run peak RSS',
        value: peak,
        unit: 'MB',
        target: `< ${RSS_TARGET_MB}`,
        pass: peak < RSS_TARGET_MB,
      },
      { bench: name, metric: 'genpipe run wall', value: best, unit: 's' },
      { bench: name, metric: 'curl PUTs, one after the other', value: bestCurl, unit: 's' },
    ],
    data: { files: RUN_FILES, file_bytes: RUN_FILE_BYTES, run_seconds: runs, curl_seconds: curls },
  };
}

export async function benchClientUpload(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-client-'));
  const file = join(dir, 'big.mp4');
  let emu: ChildEmulator | null = null;
  try {
    await writeBigFile(file, BYTES);
    emu = await spawnEmulator(writeConfig(dir), join(dir, 'data'));
    const idle = Math.min(await idleCliRss(emu), await idleCliRss(emu)) / MB;
    const cli: CliRun[] = [];
    const curl: number[] = [];
    // Each timed upload starts from the same state (see settle), and the order alternates so neither
    // side always goes first.
    for (let i = 0; i < RUNS; i++) {
      const cliFirst = i % 2 === 0;
      if (cliFirst) {
        await settle(emu);
        cli.push(await runCli(emu, file));
      }
      await settle(emu);
      curl.push(await runCurl(emu, file));
      if (!cliFirst) {
        await settle(emu);
        cli.push(await runCli(emu, file));
      }
    }
    const bestCli = Math.min(...cli.map((r) => r.seconds));
    const bestCall = Math.min(...cli.map((r) => r.callSeconds));
    const bestCurl = Math.min(...curl);
    const peak = Math.min(...cli.map((r) => r.peakRss)) / MB;
    const ratio = bestCurl / bestCli;
    const callRatio = bestCurl / bestCall;
    const name = 'client upload (1 GiB presigned)';
    const folder = process.env.BENCH_CLIENT_UPLOAD_RUN === '0' ? null : await benchRunFolder(emu, dir);
    return {
      rows: [
        {
          bench: name,
          metric: 'CLI peak RSS',
          value: peak,
          unit: 'MB',
          target: `< ${RSS_TARGET_MB}`,
          pass: peak < RSS_TARGET_MB,
        },
        {
          bench: name,
          metric: 'throughput ratio to curl',
          value: ratio,
          unit: 'x',
          target: `>= ${RATIO_TARGET}`,
          pass: ratio >= RATIO_TARGET,
        },
        { bench: name, metric: 'CLI idle RSS (files list)', value: idle, unit: 'MB' },
        { bench: name, metric: 'RSS growth while uploading', value: peak - idle, unit: 'MB' },
        { bench: name, metric: 'ratio to curl, upload call alone', value: callRatio, unit: 'x' },
        { bench: name, metric: 'CLI throughput', value: BYTES / MB / bestCli, unit: 'MB/s' },
        { bench: name, metric: 'curl throughput', value: BYTES / MB / bestCurl, unit: 'MB/s' },
        ...(folder?.rows ?? []),
      ],
      data: {
        bytes: BYTES,
        runs: RUNS,
        idle_cli_rss_mb: idle,
        cli_runs: cli.map((r) => ({
          seconds: r.seconds,
          call_seconds: r.callSeconds,
          peak_rss_mb: r.peakRss / MB,
          samples: r.samples,
        })),
        curl_seconds: curl,
        best_cli_seconds: bestCli,
        best_call_seconds: bestCall,
        call_ratio: callRatio,
        best_curl_seconds: bestCurl,
        ratio,
        peak_rss_mb: peak,
        run_folder: folder?.data ?? null,
      },
    };
  } finally {
    await emu?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
