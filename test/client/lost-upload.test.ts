/**
 * An upload whose answer comes later than the client's timeout (the emulator's latency fault, over
 * real HTTP) is a lost upload answer: retryable, sent again by the client, and worded as an upload —
 * never as a job that may exist.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LostUploadError, type RetryInfo } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { clientFor, setFaults, writePng } from './client-helpers.ts';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  dir = await mkdtemp(join(tmpdir(), 'genpipe-lost-upload-client-'));
});
afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('an upload answered later than the timeout', () => {
  it('is a LostUploadError, retried by the client, worded as an upload', async () => {
    const path = await writePng(join(dir, 'slow.png'));
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, {
      timeoutMs: 150,
      retry: { maxRetries: 2, connection: { minMs: 10, maxMs: 20 } },
      hooks: { onRetry: (i) => void retries.push(i) },
    });
    await setFaults(emu, { latency_ms: 600 });
    let error: unknown;
    try {
      await client.files.upload(path, { mode: 'inline' });
    } catch (err) {
      error = err;
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(error).toBeInstanceOf(LostUploadError);
    const lost = error as LostUploadError;
    expect(lost.retryable).toBe(true);
    expect(lost.message).toContain('upload');
    expect(lost.message).not.toMatch(/\bjob\b/);
    expect(retries.filter((r) => r.what === 'POST /v1/files')).toHaveLength(2);
  }, 30_000);
});
