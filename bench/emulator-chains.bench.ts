/**
 * Emulator chain bench: can the emulator serve the pipeline's chain bench (20 inputs × a 3-step chain,
 * a job ceiling of 3, 1 s of processing) at the pace its config sets? With `tiny_outputs`, 20 chains of
 * video → forward extend (start_frame by generation_id) → video_reframe (source by generation_id) run
 * through 3 job slots, driven by a plain HTTP loop (no genpipe client), in an emulator of its own
 * process. Baseline in the same run: the same 60 jobs as unchained videos. Reports the wall time of each
 * as a ratio to the ideal (60 jobs / 3 slots × (queue_ms + processing_ms)), the chained/unchained ratio,
 * the time generations spent processing (p90 and longest: tiny chained rendering must fit in the 1 s),
 * and the 429s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { type BenchRow, type ChildEmulator, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-chains-key';
const INPUTS = Number(process.env.BENCH_CHAIN_INPUTS ?? 20);
const CEILING = 3;
const PROCESSING_MS = 1000;
const QUEUE_MS = 20;
const POLL_MS = 20;

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

/** Creates a generation and polls it to completion; returns its id. */
async function run(emu: ChildEmulator, body: Record<string, unknown>): Promise<string> {
  const created = await json(`${emu.url}/v1/generations`, 'POST', body);
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.body?.detail}`);
  const id = created.body.id as string;
  for (;;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const g = await json(`${emu.url}/v1/generations/${id}`, 'GET');
    if (g.body.state === 'completed') return id;
    if (g.body.state === 'failed') throw new Error(`generation failed: ${g.body.failure_reason}`);
  }
}

/** The three steps of chain `i`, each built from the id the step before produced. */
function chainSteps(i: number): Array<(prev: string) => Record<string, unknown>> {
  return [
    () => ({ type: 'video', prompt: `chain ${i}`, video: { resolution: '360p' } }),
    (prev) => ({ type: 'video', prompt: `chain ${i} on`, video: { start_frame: { generation_id: prev } } }),
    (prev) => ({ type: 'video_reframe', aspect_ratio: '9:16', source: { generation_id: prev } }),
  ];
}

/** Runs `chains` (each a list of steps) through CEILING slots; returns the wall time in ms. */
async function drive(
  emu: ChildEmulator,
  chains: Array<Array<(prev: string) => Record<string, unknown>>>,
): Promise<number> {
  const state = chains.map(() => ({ next: 0, prev: '', busy: false }));
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      const i = state.findIndex((s, k) => !s.busy && s.next < (chains[k]?.length ?? 0));
      if (i === -1) {
        if (state.every((s, k) => s.next >= (chains[k]?.length ?? 0))) return;
        await new Promise((r) => setTimeout(r, POLL_MS));
        continue;
      }
      const s = state[i]!;
      s.busy = true;
      s.prev = await run(emu, chains[i]![s.next]!(s.prev));
      s.next += 1;
      s.busy = false;
    }
  };
  await Promise.all(Array.from({ length: CEILING }, worker));
  return performance.now() - t0;
}

/** Processing times of every generation (started_at to finished_at), ms, longest first. */
async function processingTimes(emu: ChildEmulator): Promise<number[]> {
  const res = await request(`${emu.url}/_emulator/generations`);
  const body = (await res.body.json()) as { data: Array<{ started_at: string; finished_at: string }> };
  return body.data.map((g) => Date.parse(g.finished_at) - Date.parse(g.started_at)).sort((a, b) => b - a);
}

async function rateLimited(emu: ChildEmulator): Promise<number> {
  const res = await request(`${emu.url}/_emulator/stats`);
  const body = (await res.body.json()) as { rate_limited: Record<string, number> };
  return Object.values(body.rate_limited).reduce((a, b) => a + b, 0);
}

async function measure(chained: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-chains-'));
  const config = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 100_000, concurrency: CEILING, balance: 1e9 },
    {
      queue_ms: QUEUE_MS,
      processing_ms: { image: PROCESSING_MS, video: PROCESSING_MS },
      tiny_outputs: true,
      abuse_ceiling: 1e12,
    },
  );
  const emu = await spawnEmulator(config, join(dir, 'data'));
  try {
    const chains = Array.from({ length: INPUTS }, (_, i) => {
      const steps = chainSteps(i);
      // Unchained: the same number of jobs, each a plain video of its own.
      return chained ? steps : steps.map((_s, k) => () => chainSteps(i * 3 + k)[0]!(''));
    });
    const wallMs = await drive(emu, chains);
    const times = await processingTimes(emu);
    return { wallMs, longestMs: times[0] ?? 0, processingMs: times, limited: await rateLimited(emu) };
  } finally {
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchEmulatorChains(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const jobs = INPUTS * 3;
  const idealMs = Math.ceil(jobs / CEILING) * (QUEUE_MS + PROCESSING_MS);
  const plain = await measure(false);
  const chained = await measure(true);
  const name = `emulator chains (${INPUTS}×3 steps, ceiling ${CEILING}, ${PROCESSING_MS} ms)`;
  const chainedRatio = chained.wallMs / idealMs;
  const vsPlain = chained.wallMs / plain.wallMs;
  const p90 = chained.processingMs[Math.floor(chained.processingMs.length * 0.1)] ?? 0;
  return {
    rows: [
      { bench: name, metric: 'unchained wall / ideal', value: plain.wallMs / idealMs, unit: 'x' },
      {
        bench: name,
        metric: 'chained wall / ideal',
        value: chainedRatio,
        unit: 'x',
        target: '<= 1.15',
        pass: chainedRatio <= 1.15,
      },
      {
        bench: name,
        metric: 'chained / unchained wall',
        value: vsPlain,
        unit: 'x',
        target: '<= 1.05',
        pass: vsPlain <= 1.05,
      },
      {
        bench: name,
        metric: 'processing p90 (chained)',
        value: p90,
        unit: 'ms',
        target: `< ${PROCESSING_MS + 100}`,
        pass: p90 < PROCESSING_MS + 100,
      },
      { bench: name, metric: 'longest processing (chained)', value: chained.longestMs, unit: 'ms' },
      {
        bench: name,
        metric: '429s',
        value: chained.limited + plain.limited,
        unit: 'count',
        target: '0',
        pass: chained.limited + plain.limited === 0,
      },
    ],
    data: {
      inputs: INPUTS,
      ceiling: CEILING,
      processing_ms: PROCESSING_MS,
      ideal_ms: idealMs,
      plain,
      chained,
    },
  };
}
