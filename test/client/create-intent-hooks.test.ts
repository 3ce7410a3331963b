/**
 * create()'s intent hooks: `beforeSend` is awaited when nothing is left to wait for but the write —
 * after the governor's job slot, the pacer's room and a retry's backoff — and before any byte of the
 * attempt is sent; `nothingQueued` after an attempt the service certainly did not act on, before the
 * wait for its retry. A create still held by the client has recorded nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CreateNotSentError, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, clientFor, KEY, setFaults, startTestEmulator, stats, until } from './client-helpers.ts';

/** Moderated when processing starts: the job fails without rendering. */
const JOB = { type: 'image', prompt: 'a held-back circle', aspect_ratio: '1:1' } as const;

let emu: RunningEmulator | null = null;
const clients: GenpipeClient[] = [];

async function start(concurrency: number): Promise<RunningEmulator> {
  emu = await startTestEmulator({
    clients: [{ id: 'a', rpm: 1000, concurrency }],
    keys: [{ key: KEY, client: 'a' }],
    blocked_words: ['held-back'],
  });
  return emu;
}

function clientOf(e: RunningEmulator, extra: Parameters<typeof clientFor>[1] = {}): GenpipeClient {
  const c = clientFor(e, extra);
  clients.push(c);
  return c;
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await emu?.close();
  emu = null;
});

describe("create()'s intent hooks", () => {
  it('beforeSend: not while the governor holds the create; once admitted, before the request is sent', async () => {
    const e = await start(1);
    const client = clientOf(e, { maxConcurrentJobs: 1 });
    const first = await client.generations.create(JOB);
    const calls: string[] = [];
    const created = client.generations.create(JOB, {
      requestId: 'held-then-sent',
      beforeSend: async (id) => {
        const seen = (await adminRows(e)).map((r) => r.request_id);
        calls.push(`before ${id}${seen.includes(id) ? ' (already sent!)' : ''}`);
      },
    });
    await until(async () => client.governor.waiting === 1);
    expect(calls).toEqual([]);
    // The first job ends: the held create is let go, records its intent, then goes out.
    await client.generations.wait(first, { throwOnFailure: false });
    const generation = await created;
    expect(calls).toEqual(['before held-then-sent']);
    expect((await adminRows(e)).find((r) => r.id === generation.id)?.request_id).toBe('held-then-sent');
  });

  it('nothingQueued after a 503, then beforeSend again for the retry, with the same request id', async () => {
    const e = await start(10);
    await setFaults(e, { http_503: 1 });
    const calls: string[] = [];
    const client = clientOf(e, {
      hooks: {
        onRetry: async () => {
          calls.push('retry wait');
          await setFaults(e, {});
        },
      },
    });
    await client.generations.create(JOB, {
      requestId: 'after-503',
      beforeSend: async (id) => void calls.push(`before ${id}`),
      nothingQueued: async (id) => void calls.push(`nothing queued ${id}`),
    });
    expect(calls).toEqual(['before after-503', 'nothing queued after-503', 'retry wait', 'before after-503']);
    expect((await stats(e)).responses['503']).toBe(1);
  });

  it('a beforeSend that rejects: nothing is sent, its error is thrown, and the slots are given back', async () => {
    const e = await start(1);
    const client = clientOf(e, { maxConcurrentJobs: 1 });
    const journalDown = new Error('the journal could not be written');
    const err = await client.generations
      .create(JOB, { requestId: 'never-recorded', beforeSend: () => Promise.reject(journalDown) })
      .catch((x) => x);
    expect(err).toBe(journalDown);
    expect(await adminRows(e)).toEqual([]);
    // The job slot and the rate-window room were released: the next create goes at once.
    await client.generations.create(JOB, { requestId: 'next' });
    expect((await adminRows(e)).map((r) => r.request_id)).toEqual(['next']);
  });

  it('a stop while the intent is being recorded: CreateNotSentError, nothing sent', async () => {
    const e = await start(10);
    const client = clientOf(e);
    const stopping = new AbortController();
    const err = await client.generations
      .create(JOB, {
        requestId: 'stopped-while-recording',
        holdSignal: stopping.signal,
        beforeSend: async () => stopping.abort(new Error('interrupted (SIGINT)')),
      })
      .catch((x) => x);
    expect(err).toBeInstanceOf(CreateNotSentError);
    expect(await adminRows(e)).toEqual([]);
  });
});
