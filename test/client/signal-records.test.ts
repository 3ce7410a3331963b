/**
 * A signal that outlives many calls (a batch's) keeps no record of them: each call's request is tied
 * to it by a listener removed once the answer is read, not by AbortSignal.any (which Node 20 leaves on
 * the signal, one record per request). Aborting it still stops a call at once.
 */
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { clientFor, startTestEmulator } from './client-helpers.ts';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu.close();
});

/** What Node keeps on a signal for each AbortSignal.any built from it (absent: none). */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = key ? (signal as unknown as Record<symbol, Set<unknown>>)[key] : undefined;
  return set?.size ?? 0;
}

describe('a long-lived signal', () => {
  it('keeps no record of the calls made with it once they are answered', async () => {
    const client = clientFor(emu);
    const batch = new AbortController();
    for (let i = 0; i < 20; i++) {
      await expect(client.generations.get(`missing-${i}`, { signal: batch.signal })).rejects.toThrow();
    }
    expect(dependants(batch.signal)).toBe(0);
    expect(getEventListeners(batch.signal, 'abort')).toHaveLength(0);
  });

  it('still aborts a call in flight', async () => {
    const client = clientFor(emu);
    const batch = new AbortController();
    const reason = new Error('batch stopped');
    const call = client.generations.get('missing', { signal: batch.signal });
    batch.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect(getEventListeners(batch.signal, 'abort')).toHaveLength(0);
  });
});
