/**
 * Pipeline bench (issue 4): the pipeline's own time per file, excluding service time. 500 small
 * images (32×32 PNG, image_edit with the file as source, uploaded inline) run through `genpipe run`'s
 * runner against an emulator in a child process with quotas that never bind (no window or ceiling
 * waits) and zero queue/processing time. From each item's timings, its own time is
 *
 *   sniff + plan + check + upload + download
 *
 * (submit and wait — pacing and the service's work — are left out; upload includes sending the bytes
 * and the readiness poll of the file, polled every 10 ms here; download includes writing the output).
 * Reported: the median and p90 of that sum, and the median of each stage. Time spent queued for a pool
 * slot is not in a stage's timing. The emulator renders each edit (a 1024 px PNG) on the same machine,
 * so the figures include that contention.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { createClient } from '../src/client/index.ts';
import type { Item, StageName } from '../src/pipeline/item.ts';
import { loadRecipe } from '../src/pipeline/recipe.ts';
import { runBatch } from '../src/pipeline/runner.ts';
import { type BenchRow, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-overhead';
const N = Number(process.env.BENCH_OVERHEAD_FILES ?? 500);
const OWN_STAGES: readonly StageName[] = ['sniff', 'plan', 'check', 'upload', 'download'];

function durationMs(item: Item, stage: StageName): number {
  const t = item.timings[stage];
  return t?.finished_at !== undefined ? t.finished_at - t.started_at : 0;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export async function benchPipelineOverhead(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-overhead-'));
  const configPath = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: 1e6, concurrency: 1000, balance: 1e12 },
    { queue_ms: 0, processing_ms: { image: 0, video: 0 }, abuse_ceiling: 1e12 },
  );
  const input = join(dir, 'in');
  await mkdir(input, { recursive: true });
  await writeFile(
    join(input, 'genpipe.yaml'),
    'rules:\n  - match: "*.png"\n    input_as: source\n    request: { type: image_edit, model: uni-1, prompt: "bench" }\n',
  );
  for (let i = 0; i < N; i++) {
    await sharp({
      create: {
        width: 32,
        height: 32,
        channels: 3,
        background: { r: i % 256, g: (i * 7) % 256, b: (i * 13) % 256 },
      },
    })
      .png()
      .toFile(join(input, `img-${String(i).padStart(4, '0')}.png`));
  }
  const emu = await spawnEmulator(configPath, join(dir, 'data'));
  const client = createClient({
    apiKey: KEY,
    baseUrl: emu.url,
    // Loopback emulator: poll file readiness every 10 ms (the 1 s floor is for the real service).
    polling: { intervalMs: 10, maxIntervalMs: 50, floorMs: 10 },
  });
  try {
    const started = Date.now();
    const result = await runBatch({
      inputDir: input,
      outDir: join(dir, 'out'),
      recipe: await loadRecipe({ inputDir: input }),
      client,
      concurrency: 16,
      pollIntervalMs: 50,
      filePollIntervalMs: 10,
      reportIntervalMs: 0,
      keepItems: true,
    });
    const done = result.items.filter((i) => i.state === 'reported');
    const own = done.map((i) => OWN_STAGES.reduce((sum, s) => sum + durationMs(i, s), 0));
    const perStage = Object.fromEntries(
      OWN_STAGES.map((s) => [
        s,
        quantile(
          done.map((i) => durationMs(i, s)),
          0.5,
        ),
      ]),
    );
    const median = quantile(own, 0.5);
    const rows: BenchRow[] = [
      {
        bench: 'pipeline-overhead',
        metric: `own time per file, median (${N} images)`,
        value: median,
        unit: 'ms',
      },
      { bench: 'pipeline-overhead', metric: 'own time per file, p90', value: quantile(own, 0.9), unit: 'ms' },
      ...OWN_STAGES.map((s) => ({
        bench: 'pipeline-overhead',
        metric: `${s}, median`,
        value: perStage[s] as number,
        unit: 'ms',
      })),
      { bench: 'pipeline-overhead', metric: 'files succeeded', value: done.length, unit: 'count' },
    ];
    return {
      rows,
      data: {
        files: N,
        succeeded: done.length,
        ownMedianMs: median,
        ownP90Ms: quantile(own, 0.9),
        stageMedianMs: perStage,
        batchWallMs: result.finishedAt - started,
      },
    };
  } finally {
    await client.close();
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
