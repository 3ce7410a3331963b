/**
 * Client bench (issue 3): 100 creates through one client against an emulator (its own process) that
 * allows 20 creates per 5-second window. Counts the 429s the emulator gave (target 0) and the wall time
 * as a ratio to the ideal schedule (target <= 1.1): 20 at t=0, the last batch at t=(ceil(100/20)-1)*5 s,
 * plus the time of one create. The generations are moderated away when processing starts (a blocked
 * word), so the emulator renders nothing and the machine's cores go to the creates.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createClient } from '../src/client/index.ts';
import { type BenchRow, type ChildEmulator, spawnEmulator, writeEmulatorConfig } from './lib.ts';

const KEY = 'svc-api-bench-pacing-key';
const CREATES = Number(process.env.BENCH_PACING_CREATES ?? 100);
const LIMIT = 20;
const WINDOW_S = 5;
const BLOCKED = 'benchskip';

function writeConfig(dir: string): string {
  return writeEmulatorConfig(
    dir,
    KEY,
    { rpm: LIMIT, concurrency: 10_000, balance: 1e9 },
    {
      rate_window_s: WINDOW_S,
      queue_ms: 10,
      processing_ms: { image: 10, video: 10 },
      blocked_words: [BLOCKED],
    },
  );
}

async function rateLimited(emu: ChildEmulator): Promise<Record<string, number>> {
  const res = await request(`${emu.url}/_emulator/stats`);
  const body = (await res.body.json()) as { rate_limited: Record<string, number> };
  return body.rate_limited;
}

export async function benchClientPacing(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-bench-pacing-'));
  const emu = await spawnEmulator(writeConfig(dir), join(dir, 'data'));
  const client = createClient({ apiKey: KEY, baseUrl: emu.url, rateWindowMs: WINDOW_S * 1000 });
  try {
    const t0 = performance.now();
    const done = await Promise.all(
      Array.from({ length: CREATES }, async (_, i) => {
        await client.generations.create({ type: 'image', prompt: `${BLOCKED} ${i}` });
        return performance.now() - t0;
      }),
    );
    const wallMs = Math.max(...done);
    const oneCreateMs = Math.min(...done);
    const idealMs = (Math.ceil(CREATES / LIMIT) - 1) * WINDOW_S * 1000 + oneCreateMs;
    const ratio = wallMs / idealMs;
    const limited = await rateLimited(emu);
    const count429 = Object.values(limited).reduce((a, b) => a + b, 0);
    const name = `client pacing (${CREATES} creates, ${LIMIT}/${WINDOW_S} s)`;
    return {
      rows: [
        {
          bench: name,
          metric: '429s received',
          value: count429,
          unit: 'count',
          target: '0',
          pass: count429 === 0,
        },
        {
          bench: name,
          metric: 'wall time / ideal',
          value: ratio,
          unit: 'x',
          target: '<= 1.1',
          pass: ratio <= 1.1,
        },
        { bench: name, metric: 'wall time', value: wallMs / 1000, unit: 's' },
      ],
      data: {
        creates: CREATES,
        limit: LIMIT,
        window_s: WINDOW_S,
        wall_ms: wallMs,
        one_create_ms: oneCreateMs,
        ideal_ms: idealMs,
        ratio,
        rate_limited: limited,
        learned_limit: client.pacer.limit,
      },
    };
  } finally {
    await client.close();
    await emu.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
