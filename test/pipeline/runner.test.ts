/**
 * The runner in process, against a real emulator over loopback: job caps, the shared poll loop,
 * resubmission of retryable failures, lost answers, failed ingests, presigned uploads, the journal
 * hook, and stopping early (a 402 mid-batch, stop(), an abort).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import type { PipelineEvent } from '../../src/pipeline/events.ts';
import { type Item, stepOf } from '../../src/pipeline/item.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import type { BatchReport } from '../../src/pipeline/report/index.ts';
import { type RunOptions, runBatch, startBatch } from '../../src/pipeline/runner.ts';
import { journalRunHooks, openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { CHOICES, FILE_FAILURE_REASONS } from '../../src/spec/index.ts';
import { call, hold, KEY, startTestEmulator, until } from '../helpers/emulator.ts';
import { flatView } from '../helpers/item-patch.ts';
import { makeImage } from '../media/fixtures.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const PROMPT_RECIPE = 'rules:\n  - match: "*.txt"\n    request: { type: image }\n';

let root: string;
let emu: RunningEmulator | null = null;
let client: GenpipeClient | null = null;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-runner-'));
});
afterEach(async () => {
  await client?.close();
  await emu?.close();
  client = null;
  emu = null;
  await rm(root, { recursive: true, force: true });
});

async function setUp(overrides: Record<string, unknown> = {}): Promise<GenpipeClient> {
  emu = await startTestEmulator(overrides);
  client = createClient({ apiKey: KEY, baseUrl: emu.url, polling: { intervalMs: 20, floorMs: 10 } });
  return client;
}

async function promptFolder(count: number, recipe = PROMPT_RECIPE): Promise<string> {
  const dir = join(root, 'in');
  await put(dir, 'genpipe.yaml', recipe);
  for (let i = 0; i < count; i++) await put(dir, `p${i}.txt`, `prompt number ${i}`);
  return dir;
}

async function options(
  inputDir: string,
  c: GenpipeClient,
  extra: Partial<RunOptions> = {},
): Promise<RunOptions> {
  return {
    inputDir,
    outDir: join(root, 'out'),
    recipe: await loadRecipe({ inputDir }),
    client: c,
    pollIntervalMs: 30,
    filePollIntervalMs: 20,
    reportIntervalMs: 0,
    keepItems: true,
    ...extra,
  };
}

describe('runner', () => {
  it('asks the journal for vanished work naming only the inputs it never admitted (no set of every input kept)', async () => {
    const c = await setUp();
    const dir = await promptFolder(2);
    await put(dir, 'notes.bin', 'matches no rule');
    const outDir = join(root, 'out');
    const journal = openJournal({ outDir, mountInfo: null });
    try {
      await journal.startBatch({ inputDir: dir, service: emu!.url, options: {} });
      const opts = await options(dir, c);
      const hooks = journalRunHooks(journal, opts.recipe);
      let seen: ((input: string) => boolean) | null = null;
      const { report } = await runBatch({
        ...opts,
        persist: hooks.persist,
        admit: hooks.admit,
        vanished: (s) => {
          seen = s;
          return hooks.vanished(s);
        },
      });
      expect(report.totals).toMatchObject({ inputs: 3, succeeded: 2, skipped: 1 });
      const asked = seen as unknown as (input: string) => boolean;
      expect([asked('p0.txt'), asked('p1.txt'), asked('notes.bin')]).toEqual([false, false, true]);
    } finally {
      await journal.close();
    }
  });

  it('says in the running reports that files are still being discovered, and how many so far', async () => {
    const c = await setUp({ processing_ms: { image: 5, video: 5 } });
    const dir = await promptFolder(40);
    // Every job stays processing: discovery waits on the in-flight cap, far from the 40th file.
    await hold(emu!);
    const batch = startBatch(await options(dir, c, { concurrency: 1, reportIntervalMs: 20 }));
    const out = join(root, 'out');
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    let running: any = null;
    await until(async () => {
      running = await readJson(join(out, 'report.json')).catch(() => null);
      return running !== null && running.totals.inputs > 0;
    });
    expect(running.finished_at).toBeNull();
    expect(running.discovering).toBe(true);
    expect(running.totals.inputs).toBeLessThan(40);
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain('Files are still being discovered');
    expect(html).toContain('inputs (discovering…)');
    emu!.app.emu.holds.clear();
    const result = await batch.done;
    expect(result.report.totals).toMatchObject({ inputs: 40, succeeded: 40 });
    expect(result.report.discovering).toBeUndefined();
    expect(await readFile(join(out, 'report.html'), 'utf8')).not.toContain('discovering');
  });

  it('never has more jobs in flight than --concurrency', async () => {
    const c = await setUp({ processing_ms: { image: 150, video: 150 } });
    const dir = await promptFolder(6);
    // The first jobs stay processing until two are in flight at once; then all run freely.
    await hold(emu!);
    let inFlight = 0;
    let most = 0;
    const onEvent = (e: PipelineEvent) => {
      if (e.type !== 'item_state') return;
      if (e.state === 'submitted') most = Math.max(most, ++inFlight);
      if (e.state === 'completed' || e.state === 'failed') inFlight--;
      if (inFlight === 2) emu!.app.emu.holds.clear();
    };
    const result = await runBatch(await options(dir, c, { concurrency: 2, onEvent }));
    expect(result.report.totals).toMatchObject({ inputs: 6, succeeded: 6 });
    expect(most).toBe(2);
    const stats = await call(emu!, 'GET', '/_emulator/stats');
    expect(stats.body.rate_limited.concurrency ?? 0).toBe(0);
  });

  it('lets the client learn a service ceiling below --concurrency, with few 429s', async () => {
    const c = await setUp({
      clients: [{ id: 'a', state: 'active', rpm: 1000, concurrency: 2, balance: 1_000_000 }],
      keys: [{ key: KEY, client: 'a' }],
      processing_ms: { image: 100, video: 100 },
    });
    const dir = await promptFolder(8);
    // The first two jobs stay processing until the service has refused a third.
    await hold(emu!);
    const running = runBatch(await options(dir, c, { concurrency: 8 }));
    await until(async () => emu!.app.emu.stats.rateLimited.concurrency > 0);
    emu!.app.emu.holds.clear();
    const result = await running;
    expect(result.report.totals).toMatchObject({ inputs: 8, succeeded: 8, failed: 0 });
    expect(c.governor.ceiling).toBe(2);
    const stats = await call(emu!, 'GET', '/_emulator/stats');
    expect(stats.body.rate_limited.concurrency).toBeGreaterThan(0);
    expect(stats.body.rate_limited.concurrency).toBeLessThanOrEqual(8);
  });

  it('resubmits a retryable failure once, keeping the earlier attempt, then fails with its reason', async () => {
    const c = await setUp({ faults: { failure_codes: { generation_failed: 1 } } });
    const dir = await promptFolder(1);
    const result = await runBatch(await options(dir, c, { maxResubmits: 1 }));
    const [item] = result.items as [Item];
    expect(item.state).toBe('failed');
    expect(item.failedAt).toBe('wait');
    expect(item.reason).toBe(`generation_failed: ${CHOICES.failureReasons.generation_failed}`);
    expect(stepOf(item).attempts).toBe(2);
    expect(stepOf(item).earlierAttempts).toHaveLength(1);
    expect(stepOf(item).earlierAttempts![0]!.failure_code).toBe('generation_failed');
    expect(stepOf(item).earlierAttempts![0]!.generation_id).not.toBe(stepOf(item).generationId);
    const admin = await call(emu!, 'GET', '/_emulator/generations');
    expect(admin.body.data).toHaveLength(2);
  });

  it("waits the client's resubmit backoff before the new create", async () => {
    emu = await startTestEmulator({ faults: { failure_codes: { generation_failed: 1 } } });
    client = createClient({
      apiKey: KEY,
      baseUrl: emu.url,
      polling: { intervalMs: 20, floorMs: 10 },
      retry: { resubmit: { minMs: 700, maxMs: 700 } },
    });
    const dir = await promptFolder(1);
    const events: PipelineEvent[] = [];
    await runBatch(await options(dir, client, { maxResubmits: 1, onEvent: (e) => void events.push(e) }));
    const states = events.filter((e) => e.type === 'item_state');
    const resubmitting = states.findIndex(
      (e) => e.state === 'uploaded' && e.reason?.startsWith('resubmitting'),
    );
    const next = states.slice(resubmitting + 1).find((e) => e.state === 'submitted');
    expect(resubmitting).toBeGreaterThan(-1);
    // A lower bound only: the wait is at least the policy's (no upper bound on a loaded machine).
    expect(next!.at - states[resubmitting]!.at).toBeGreaterThanOrEqual(700);
  });

  it('does not resubmit a non-retryable failure', async () => {
    const c = await setUp({ blocked_words: ['wolf'] });
    const dir = join(root, 'in');
    await put(dir, 'genpipe.yaml', PROMPT_RECIPE);
    await put(dir, 'w.txt', 'a grey wolf');
    const result = await runBatch(await options(dir, c, { maxResubmits: 3 }));
    expect(flatView(result.items[0]!)).toMatchObject({ state: 'failed', attempts: 1 });
    expect(stepOf(result.items[0]!).generation?.failure_code).toBe('content_moderated');
  });

  it('fails an item whose create answer was lost, with its request id, and never resends it', async () => {
    const c = await setUp();
    await call(emu!, 'PUT', '/_emulator/faults', { json: { reset_after: 1 } });
    const dir = await promptFolder(1);
    const result = await runBatch(await options(dir, c));
    const [item] = result.items as [Item];
    expect(item).toMatchObject({ state: 'failed', failedAt: 'submit' });
    expect(stepOf(item).requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(item.reason).toContain(`X-Request-Id ${stepOf(item).requestId}`);
    expect(item.reason).toContain('not resubmitted');
    const admin = await call(emu!, 'GET', '/_emulator/generations');
    expect(admin.body.data).toHaveLength(1);
    expect(admin.body.data[0].request_id).toBe(stepOf(item).requestId);
    expect(result.stop).toBeNull();
  });

  it('journals the request id before the create is sent', async () => {
    const c = await setUp();
    const dir = await promptFolder(2);
    const seen: Item[] = [];
    const result = await runBatch(await options(dir, c, { persist: async (i) => void seen.push(i) }));
    for (const item of result.items) {
      const mine = seen.filter((s) => s.input === item.input);
      const before = mine.findIndex(
        (s) => s.state === 'uploaded' && stepOf(s).requestId === stepOf(item).requestId,
      );
      const after = mine.findIndex((s) => s.state === 'submitted');
      expect(before).toBeGreaterThanOrEqual(0);
      expect(after).toBeGreaterThan(before);
      expect(mine.at(-1)!.state).toBe('reported');
    }
  });

  it('sends the create without waiting for the journal writes of the steps that sent nothing, and waits for the request id', async () => {
    const c = await setUp();
    const dir = await promptFolder(1);
    /** Writes of states that hold nothing of the service's, held until the create is answered. */
    const held: { state: string; release: () => void }[] = [];
    let pendingAtCreate: string[] | null = null;
    const persist = async (i: Item): Promise<void> => {
      const step = i.steps[0];
      if (!step?.requestId && !step?.generationId && i.state !== 'reported') {
        await new Promise<void>((release) => held.push({ state: i.state, release }));
        return;
      }
      if (i.state === 'submitted' && pendingAtCreate === null) {
        pendingAtCreate = held.map((h) => h.state);
        for (const h of held) h.release();
      }
    };
    const result = await runBatch(await options(dir, c, { persist }));
    expect(result.items[0]!.state).toBe('reported');
    // The sniffed, planned, checked and prompt-ready writes were still not durable when the create
    // went out; the request id's write was (the persist above resolved it before the create).
    expect(pendingAtCreate).toEqual(expect.arrayContaining(['sniffed', 'planned', 'checked', 'uploaded']));
  });

  it('fails a file the service refuses at ingest with its failure_reason, and uploads presigned on request', async () => {
    const c = await setUp({ blocked_words: ['forbidden'] });
    const dir = join(root, 'in');
    await put(
      dir,
      'genpipe.yaml',
      'rules:\n  - match: "*.png"\n    input_as: source\n    upload: presigned\n    request: { type: image_edit, prompt: "x" }\n',
    );
    await makeImage(await put(dir, 'forbidden.png', ''), { width: 16, height: 16 });
    await makeImage(await put(dir, 'fine.png', ''), { width: 16, height: 16 });
    const result = await runBatch(await options(dir, c));
    const [good, bad] = result.items as [Item, Item]; // sorted by input
    expect(bad).toMatchObject({ input: 'forbidden.png', state: 'failed', failedAt: 'upload' });
    expect(bad.reason).toBe(FILE_FAILURE_REASONS.moderated);
    expect(good).toMatchObject({ input: 'fine.png', state: 'reported' });
    expect(stepOf(good).upload?.mode).toBe('presigned');
    const r = await readJson(join(root, 'out', 'forbidden.png', 'result.json'));
    expect(r).toMatchObject({ status: 'failed', failed_stage: 'upload', failure_reason: bad.reason });
  });

  it('stops early on 402: the running job finishes, the rest are not processed', async () => {
    const c = await setUp({
      clients: [{ id: 'a', state: 'active', rpm: 1000, concurrency: 50, balance: 1 }],
      keys: [{ key: KEY, client: 'a' }],
    });
    const dir = await promptFolder(3);
    const result = await runBatch(await options(dir, c, { concurrency: 1 }));
    expect(result.stop?.cause).toBe('service');
    expect(result.stop?.reason).toContain('Insufficient balance');
    expect(result.report.totals).toMatchObject({ inputs: 3, succeeded: 1, unprocessed: 2 });
    expect(result.report.stopped_early?.reason).toBe(result.stop?.reason);
    // said once, in the service's words; the files not processed refer to it briefly
    expect(result.stop?.reason).toMatch(/^Insufficient balance\. Please add funds to continue\. \(HTTP 402/);
    expect(result.stop?.reason.match(/insufficient balance/gi)).toHaveLength(1);
    const unprocessed = result.items.filter((i) => i.state === 'stopped');
    expect(unprocessed.map((i) => i.reason)).toEqual([
      'not processed: the batch stopped early (insufficient balance)',
      'not processed: the batch stopped early (insufficient balance)',
    ]);
  });

  it('stops early when the service is unreachable after the client retries', async () => {
    await setUp();
    const url = emu!.url;
    await emu!.close();
    emu = null;
    const unreachable = createClient({ apiKey: KEY, baseUrl: url, maxRetries: 1 });
    try {
      const dir = await promptFolder(3);
      const result = await runBatch(await options(dir, unreachable, { concurrency: 1 }));
      expect(result.stop?.cause).toBe('service');
      expect(result.stop?.reason).toMatch(/^service unreachable after retries: /);
      expect(result.report.totals).toMatchObject({ inputs: 3, unprocessed: 3 });
    } finally {
      await unreachable.close();
    }
  });

  it('stop() takes no new work but finishes jobs already submitted', async () => {
    const c = await setUp({ processing_ms: { image: 200, video: 200 } });
    const dir = await promptFolder(5);
    let batch: ReturnType<typeof startBatch> | null = null;
    const onEvent = (e: PipelineEvent) => {
      if (e.type === 'item_state' && e.state === 'submitted') batch?.stop('test stop');
    };
    batch = startBatch(await options(dir, c, { concurrency: 1, onEvent }));
    const result = await batch.done;
    expect(result.stop).toEqual({ reason: 'test stop', cause: 'interrupted' });
    expect(result.report.totals).toMatchObject({ inputs: 5, succeeded: 1, unprocessed: 4 });
    const report = (await readJson(join(root, 'out', 'report.json'))) as BatchReport;
    const events = report.items.filter((i) => i.status === 'unprocessed');
    expect(events[0]!.reason).toBe('not processed: the batch stopped early (test stop)');
  });

  it('an abort cancels jobs in flight and still writes the reports', async () => {
    const c = await setUp();
    const dir = await promptFolder(2);
    // The job never finishes by itself: the batch can only end by cancelling it.
    await hold(emu!);
    const controller = new AbortController();
    const onEvent = (e: PipelineEvent) => {
      if (e.type === 'item_state' && e.state === 'submitted') controller.abort();
    };
    const result = await runBatch(await options(dir, c, { signal: controller.signal, onEvent }));
    // The batch ended while its job was still running at the service.
    const [job] = (await call(emu!, 'GET', '/_emulator/generations')).body.data;
    expect(['queued', 'processing']).toContain(job.state);
    expect(result.stop?.cause).toBe('aborted');
    expect(result.report.totals.unprocessed).toBe(2);
    const submitted = result.items.find((i) => stepOf(i).generationId !== null);
    expect(submitted?.reason).toContain(`generation ${stepOf(submitted!).generationId} was submitted`);
    const report = await readJson(join(root, 'out', 'report.json'));
    expect(report.totals.unprocessed).toBe(2);
  });
});
