/**
 * A create's hold signal (a batch's "no new work"): it cuts the waits before the request is sent — held
 * by the pacer, by the governor, between retries — and the create then throws CreateNotSentError (an
 * abort, `sent: false`); the emulator never saw that request id. A request already on the wire is not
 * cut by it. The long-lived signals keep no listener of the creates made with them.
 */
import { getEventListeners } from 'node:events';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { CreateNotSentError, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, clientFor, KEY, setFaults, startTestEmulator, stats, until } from './client-helpers.ts';

/** Moderated when processing starts: no rendering. */
const JOB = { type: 'image', prompt: 'a held-back circle', aspect_ratio: '1:1' } as const;

let emu: RunningEmulator | null = null;
const clients: GenpipeClient[] = [];
const agents: Agent[] = [];

/** An emulator whose client may create `rpm` generations per minute and run `concurrency` jobs. */
async function start(rpm: number, concurrency: number): Promise<RunningEmulator> {
  emu = await startTestEmulator({
    clients: [{ id: 'a', rpm, concurrency }],
    keys: [{ key: KEY, client: 'a' }],
    rate_window_s: 60,
    blocked_words: ['held-back'],
  });
  return emu;
}

function clientOf(e: RunningEmulator, extra: Parameters<typeof clientFor>[1] = {}): GenpipeClient {
  const c = clientFor(e, extra);
  clients.push(c);
  return c;
}

/** The emulator's answers but its 200s (the admin view's): a create's 201, 429, 503… */
async function createAnswers(e: RunningEmulator): Promise<number> {
  const counted = Object.entries((await stats(e)).responses).filter(([status]) => status !== '200');
  return counted.reduce((sum, [, n]) => sum + n, 0);
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const a of agents.splice(0)) await a.close();
  await emu?.close();
  emu = null;
});

describe('a create cut before it was sent', () => {
  it('held by the pacer: CreateNotSentError, and the emulator saw no request with its id', async () => {
    const e = await start(1, 10);
    const client = clientOf(e, { rateWindowMs: 60_000 });
    await client.generations.create(JOB); // the window's one create: the next one is held
    const batch = new AbortController();
    const stopping = new AbortController();
    const requestId = 'held-by-the-pacer';
    const held = client.generations.create(JOB, {
      requestId,
      signal: batch.signal,
      holdSignal: stopping.signal,
    });
    await until(async () => client.pacer.waiting === 1);
    const before = await createAnswers(e);
    stopping.abort(new Error('interrupted (SIGINT)'));
    const err = await held.catch((x) => x);
    expect(err).toBeInstanceOf(CreateNotSentError);
    expect(err).toMatchObject({ name: 'AbortError', sent: false, requestId });
    expect((err as Error).cause).toBe(stopping.signal.reason);
    expect(client.pacer.waiting).toBe(0);
    expect(await createAnswers(e)).toBe(before);
    expect((await adminRows(e)).map((r) => r.request_id)).not.toContain(requestId);
    expect(getEventListeners(batch.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
  });

  it('held by the governor and cancelled by the batch signal: CreateNotSentError too', async () => {
    const e = await start(1000, 1);
    const client = clientOf(e, { maxConcurrentJobs: 1 });
    await client.generations.create(JOB);
    const batch = new AbortController();
    const held = client.generations.create(JOB, { requestId: 'held-by-the-governor', signal: batch.signal });
    await until(async () => client.governor.waiting === 1);
    batch.abort();
    await expect(held).rejects.toBeInstanceOf(CreateNotSentError);
    expect((await adminRows(e)).map((r) => r.request_id)).not.toContain('held-by-the-governor');
  });

  it('waiting between retries after a 503: CreateNotSentError, nothing queued', async () => {
    const e = await start(1000, 10);
    await setFaults(e, { http_503: 1 });
    const stopping = new AbortController();
    const client = clientOf(e, {
      retry: { ingestion: { minMs: 60_000, maxMs: 60_000 } },
      hooks: { onRetry: () => stopping.abort(new Error('interrupted (SIGTERM)')) },
    });
    const err = await client.generations
      .create(JOB, { requestId: 'between-retries', holdSignal: stopping.signal })
      .catch((x) => x);
    expect(err).toBeInstanceOf(CreateNotSentError);
    expect(await createAnswers(e)).toBe(1);
    expect((await stats(e)).responses['503']).toBe(1);
    expect(await adminRows(e)).toEqual([]);
  });

  it('never cuts a create on the wire: it goes on to its answer', async () => {
    const e = await start(1000, 10);
    const stopping = new AbortController();
    // The hold signal aborts as the create is handed to the connection.
    const agent = new Agent();
    agents.push(agent);
    const dispatcher = agent.compose((dispatch) => (opts, handler) => {
      if (opts.method === 'POST' && String(opts.path).startsWith('/v1/generations')) stopping.abort();
      return dispatch(opts, handler);
    });
    const client = clientOf(e, { dispatcher });
    const created = await client.generations.create(JOB, {
      requestId: 'on-the-wire',
      holdSignal: stopping.signal,
    });
    expect(stopping.signal.aborted).toBe(true);
    expect((await adminRows(e)).map((r) => [r.id, r.request_id])).toEqual([[created.id, 'on-the-wire']]);
  });
});
