/**
 * GET /_emulator/balance: each client's balance and the credits it was charged, by generation type —
 * completed generations charged their type's cost, failed ones (budget_exhausted included) and
 * unfinished ones not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, call, hold, KEY_B, startTestEmulator, unhold, until } from '../helpers/emulator.ts';

const IMAGE = { type: 'image', prompt: 'a blue circle', aspect_ratio: '1:1' };

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startTestEmulator({
    clients: [
      { id: 'a', state: 'active', rpm: 1000, concurrency: 50, balance: 5 },
      { id: 'b', state: 'active', rpm: 1000, concurrency: 50, balance: 1000 },
      { id: 'c', state: 'active', rpm: 1000, concurrency: 50, balance: 7 },
    ],
    costs: { image: 2 },
    blocked_words: ['forbidden'],
  });
});
afterAll(async () => {
  await emu.close();
});

describe('GET /_emulator/balance', () => {
  it('tells each client its balance and the credits charged for each type', async () => {
    // Client a (5 credits): four images pass the balance check at submission and are kept processing;
    // let go, one is moderated, two are charged 2 each, and the last finds 1 credit left.
    const keepA = await hold(emu, { state: 'processing', client: 'a' });
    const keepB = await hold(emu, { state: 'queued', client: 'b', prompt: 'stay' });
    for (const prompt of ['one', 'two', 'three', 'something forbidden']) {
      expect((await call(emu, 'POST', '/v1/generations', { json: { ...IMAGE, prompt } })).status).toBe(201);
    }
    for (const prompt of ['done', 'stay here']) {
      const r = await call(emu, 'POST', '/v1/generations', { json: { ...IMAGE, prompt }, key: KEY_B });
      expect(r.status).toBe(201);
    }
    await until(async () => {
      const rows = await adminRows(emu);
      const a = rows.filter((r) => r.client_id === 'a');
      const b = rows.filter((r) => r.client_id === 'b');
      return a.every((r) => r.held === 'processing') &&
        b.some((r) => r.state === 'completed') &&
        b.some((r) => r.held)
        ? rows
        : null;
    });
    await unhold(emu, keepA);
    await until(async () =>
      (await adminRows(emu, 'a')).every((r) => r.state === 'failed' || r.state === 'completed') ? true : null,
    );

    const res = await call(emu, 'GET', '/_emulator/balance', { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          client_id: 'a',
          balance_at_start: 5,
          balance: 1,
          credits_charged: 4,
          by_type: { image: { generations: 4, completed: 2, failed: 2, unfinished: 0, credits_charged: 4 } },
        },
        {
          client_id: 'b',
          balance_at_start: 1000,
          balance: 998,
          credits_charged: 2,
          by_type: { image: { generations: 2, completed: 1, failed: 0, unfinished: 1, credits_charged: 2 } },
        },
        { client_id: 'c', balance_at_start: 7, balance: 7, credits_charged: 0, by_type: {} },
      ],
    });
    const failures = (await adminRows(emu, 'a')).map((r) => r.failure_code).filter((c) => c !== null);
    expect(failures.sort()).toEqual(['budget_exhausted', 'content_moderated']);
    await unhold(emu, keepB);
  });
});
