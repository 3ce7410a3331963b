/**
 * Chain bench: does a batch of chains keep the service's job ceiling full? 20 photos, each through a
 * 3-step chain (stylize: image_edit → animate: video from the stylized still → reframe: video_reframe of
 * the clip), against an emulator in a child process whose client has a ceiling of 3 concurrent jobs and
 * a request window no run reaches; every job takes P = queue_ms + processing_ms (50 + 950 = 1000 ms).
 * The pipeline runs in this process with its defaults (it learns the ceiling of 3 from the service).
 *
 * The ideal schedule (no overhead, no polling latency): 60 step-jobs over 3 slots, each 1 s, with a
 * step able to start the moment its parent ends — ceil(60 / 3) · P = 20 s. A runner that did every
 * input's first step before any second step would be no slower in total here; what this measures is
 * that a step's job starts as soon as its parent completes, so the slots never idle while any step
 * could run. Target: wall / ideal ≤ 1.3.
 *
 * Measured wall time: from batch_started to the moment the last input reached its final state;
 * report.json / report.html are written after that and not counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { createClient } from '../src/client/index.ts';
import type { PipelineEvent } from '../src/pipeline/events.ts';
import { FINAL_ITEM_STATES } from '../src/pipeline/item.ts';
import { loadRecipe } from '../src/pipeline/recipe.ts';
import { runBatch } from '../src/pipeline/runner.ts';
import { type BenchRow, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-chain';
const N = Number(process.env.BENCH_CHAIN_INPUTS ?? 20);
const STEPS = 3;
const CEILING = 3;
const QUEUE_MS = 50;
const PROCESSING_MS = 950;

const RECIPE = `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor" }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "slow pan", video: { resolution: 360p, start_frame: { from: stylize } } }
      - name: reframe
        request: { type: video_reframe, model: ray-3.2, prompt: "keep it", aspect_ratio: "9:16", source: { from: animate }, video: { resolution: 360p } }
`;

export async function benchPipelineChain(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-chain-'));
  const configPath = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 10_000, concurrency: CEILING, balance: 1e9 },
    {
      queue_ms: QUEUE_MS,
      processing_ms: { image: PROCESSING_MS, video: PROCESSING_MS },
      abuse_ceiling: 1e9,
      // Minimal outputs: the emulator's rendering would otherwise lengthen every job past P on 2 cores.
      tiny_outputs: true,
    },
  );
  const input = join(dir, 'in');
  await mkdir(input, { recursive: true });
  await writeFile(join(input, 'genpipe.yaml'), RECIPE);
  for (let i = 0; i < N; i++) {
    const png = await sharp({
      create: { width: 64, height: 48, channels: 3, background: { r: (i * 37) % 256, g: 120, b: 200 } },
    })
      .png()
      .toBuffer();
    await writeFile(join(input, `photo-${String(i).padStart(3, '0')}.png`), png);
  }
  const emu = await spawnEmulator(configPath, join(dir, 'data'));
  const client = createClient({ apiKey: KEY, baseUrl: emu.url, polling: { intervalMs: 50, floorMs: 20 } });
  try {
    let startedAt = 0;
    let lastFinal = 0;
    const onEvent = (e: PipelineEvent) => {
      if (e.type === 'batch_started') startedAt = e.at;
      if (e.type === 'item_state' && FINAL_ITEM_STATES.includes(e.state))
        lastFinal = Math.max(lastFinal, e.at);
    };
    const result = await runBatch({
      inputDir: input,
      outDir: join(dir, 'out'),
      recipe: await loadRecipe({ inputDir: input }),
      client,
      pollIntervalMs: 100,
      reportIntervalMs: 0,
      onEvent,
    });
    const wallMs = lastFinal - startedAt;
    const jobs = N * STEPS;
    const idealMs = Math.ceil(jobs / CEILING) * (QUEUE_MS + PROCESSING_MS);
    const ratio = wallMs / idealMs;
    const t = result.report.totals;
    const gens = (await request(`${emu.url}/_emulator/generations`).then((r) => r.body.json())) as {
      data: Array<{ type: string; created_at: string; finished_at: string | null }>;
    };
    // Each job's time at the service, by type (its create to its end): what the ideal assumes is P.
    const byType: Record<string, number[]> = {};
    for (const g of gens.data) {
      if (!g.finished_at) continue;
      const list = byType[g.type] ?? [];
      list.push(Date.parse(g.finished_at) - Date.parse(g.created_at));
      byType[g.type] = list;
    }
    const meanJobMs = Object.fromEntries(
      Object.entries(byType).map(([k, v]) => [k, Math.round(v.reduce((a, b) => a + b, 0) / v.length)]),
    );
    const serviceMs = Object.values(byType)
      .flat()
      .reduce((a, b) => a + b, 0);
    const busy = serviceMs / (CEILING * wallMs);
    const rows: BenchRow[] = [
      {
        bench: 'pipeline-chain',
        metric: `${N} inputs × ${STEPS}-step chain, wall time`,
        value: wallMs / 1000,
        unit: 's',
      },
      {
        bench: 'pipeline-chain',
        metric: `ideal schedule (${jobs} step-jobs over ${CEILING} slots)`,
        value: idealMs / 1000,
        unit: 's',
      },
      {
        bench: 'pipeline-chain',
        metric: 'wall / ideal',
        value: ratio,
        unit: 'ratio',
        target: '<= 1.3',
        pass: ratio <= 1.3 && t.succeeded === N,
      },
      {
        bench: 'pipeline-chain',
        metric: 'job slots busy (service time / ceiling × wall)',
        value: busy,
        unit: 'ratio',
      },
      { bench: 'pipeline-chain', metric: 'inputs succeeded', value: t.succeeded, unit: 'count' },
    ];
    return {
      rows,
      data: {
        inputs: N,
        steps: STEPS,
        ceiling: CEILING,
        jobMs: QUEUE_MS + PROCESSING_MS,
        wallMs,
        idealMs,
        ratio,
        meanJobMs,
        busy,
        totals: t,
      },
    };
  } finally {
    await client.close();
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
