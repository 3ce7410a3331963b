/**
 * Pipeline bench (issue 4): how close `genpipe run` comes to the ideal schedule the service's quotas
 * allow. 300 prompt files (type image) run against an emulator in a child process whose client has a
 * 20-per-5-s request window and a ceiling of 3 concurrent jobs; each job takes P = queue_ms +
 * processing_ms.image (50 + 450 = 500 ms) on the emulator. The pipeline runs in this process with its
 * defaults (--concurrency 8, so it must learn the ceiling of 3 from the service) and the client told the
 * window length.
 *
 * The ideal schedule (no pipeline overhead, no polling latency, no network time): creates go out in
 * windows of W = 20, every T = 5 s (a create frees its window slot T after it was made); inside a
 * window, at most C = 3 jobs run at once, so a window's W jobs need ceil(W / C) waves of P. With N
 * files, G = ceil(N / W) windows, and the last window holding N - (G - 1)·W jobs:
 *
 *   ideal = max( (G - 1)·T + ceil((N - (G - 1)·W) / C)·P ,  ceil(N / C)·P )
 *
 * the first term when the window binds (ceil(W/C)·P ≤ T, as here: 7 × 0.5 s ≤ 5 s), the second when
 * the ceiling does. Here: max(14 × 5 + 7 × 0.5, 100 × 0.5) = 73.5 s.
 *
 * Measured wall time: from batch_started to the moment the last file reached its final state
 * (downloaded and its result.json written); report.json/report.html (which makes a thumbnail of each
 * output) are written after that and not counted. Target: wall / ideal ≤ 1.15. Also reported: the 429s
 * the emulator sent, by kind (from its admin stats).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createClient } from '../src/client/index.ts';
import type { PipelineEvent } from '../src/pipeline/events.ts';
import { FINAL_ITEM_STATES } from '../src/pipeline/item.ts';
import { loadRecipe } from '../src/pipeline/recipe.ts';
import { runBatch } from '../src/pipeline/runner.ts';
import { type BenchRow, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-schedule';
const N = Number(process.env.BENCH_SCHEDULE_FILES ?? 300);
const WINDOW = 20;
const WINDOW_S = 5;
const CEILING = 3;
const QUEUE_MS = 50;
const PROCESSING_MS = 450;

/** The ideal wall time in ms (see the module comment). */
export function idealScheduleMs(
  n: number,
  w: number,
  windowMs: number,
  ceiling: number,
  jobMs: number,
): number {
  const windows = Math.ceil(n / w);
  const last = n - (windows - 1) * w;
  const rateBound = (windows - 1) * windowMs + Math.ceil(last / ceiling) * jobMs;
  const ceilingBound = Math.ceil(n / ceiling) * jobMs;
  return Math.max(rateBound, ceilingBound);
}

export async function benchPipelineSchedule(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-schedule-'));
  const configPath = writeEmulatorConfig(
    dir,
    KEY,
    { rpm: WINDOW, concurrency: CEILING, balance: 1e9 },
    {
      rate_window_s: WINDOW_S,
      queue_ms: QUEUE_MS,
      processing_ms: { image: PROCESSING_MS, video: PROCESSING_MS },
      abuse_ceiling: 1e9,
    },
  );
  const input = join(dir, 'in');
  await mkdir(input, { recursive: true });
  await writeFile(
    join(input, 'genpipe.yaml'),
    'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n',
  );
  for (let i = 0; i < N; i++) {
    await writeFile(join(input, `prompt-${String(i).padStart(4, '0')}.txt`), `bench prompt number ${i}`);
  }
  const emu = await spawnEmulator(configPath, join(dir, 'data'));
  const client = createClient({
    apiKey: KEY,
    baseUrl: emu.url,
    rateWindowMs: WINDOW_S * 1000,
    // Loopback emulator: file-readiness polling may be fast (no files are uploaded here anyway).
    polling: { intervalMs: 50, floorMs: 20 },
  });
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
    const idealMs = idealScheduleMs(N, WINDOW, WINDOW_S * 1000, CEILING, QUEUE_MS + PROCESSING_MS);
    const ratio = wallMs / idealMs;
    const stats = await request(`${emu.url}/_emulator/stats`).then((r) => r.body.json());
    const limited = (stats as { rate_limited: Record<string, number> }).rate_limited;
    const total429 = Object.values(limited).reduce((a, b) => a + b, 0);
    const t = result.report.totals;
    const rows: BenchRow[] = [
      { bench: 'pipeline-schedule', metric: `${N} prompt files, wall time`, value: wallMs / 1000, unit: 's' },
      { bench: 'pipeline-schedule', metric: 'ideal schedule', value: idealMs / 1000, unit: 's' },
      {
        bench: 'pipeline-schedule',
        metric: 'wall / ideal',
        value: ratio,
        unit: 'ratio',
        target: '<= 1.15',
        pass: ratio <= 1.15 && t.succeeded === N,
      },
      { bench: 'pipeline-schedule', metric: '429s received (all kinds)', value: total429, unit: 'count' },
      { bench: 'pipeline-schedule', metric: 'files succeeded', value: t.succeeded, unit: 'count' },
    ];
    return {
      rows,
      data: {
        files: N,
        window: { creates: WINDOW, seconds: WINDOW_S },
        ceiling: CEILING,
        jobMs: QUEUE_MS + PROCESSING_MS,
        wallMs,
        idealMs,
        ratio,
        rateLimited: limited,
        totals: t,
        // Wall time including the final report.json / report.html (thumbnails of every output).
        wallWithReportsMs: Date.now() - startedAt,
      },
    };
  } finally {
    await client.close();
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
