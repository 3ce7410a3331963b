import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WATCH_DEFAULTS } from '../../src/pipeline/watch/index.ts';
import { resolveWatchSettings } from '../../src/pipeline/watch/options.ts';

const onReady = () => undefined;

describe("the watcher's settings", () => {
  it('fill every default from WATCH_DEFAULTS and make the folder absolute', () => {
    const s = resolveWatchSettings({ dir: 'inbox', onReady });
    expect(s).toMatchObject({
      dir: resolve('inbox'),
      outDir: undefined,
      quietMs: WATCH_DEFAULTS.quietMs,
      rescanMs: WATCH_DEFAULTS.rescanMs,
      giveUpMs: WATCH_DEFAULTS.giveUpMs,
      retryMs: WATCH_DEFAULTS.retryMs,
      forgetAfterMs: WATCH_DEFAULTS.forgetAfterMs,
      checkConcurrency: WATCH_DEFAULTS.checkConcurrency,
      hints: {
        poll: false,
        pollIntervalMs: WATCH_DEFAULTS.pollIntervalMs,
        delayMs: WATCH_DEFAULTS.hintDelayMs,
        readyWaitMs: WATCH_DEFAULTS.hintsReadyWaitMs,
      },
    });
    expect([...s.skipFiles]).toEqual([]);
  });

  it('keep what the caller gave, with at least one check at a time and the tick within 25 ms .. 1 s', () => {
    const s = resolveWatchSettings({ dir: '/in', onReady, quietMs: 400, checkConcurrency: 0, poll: true });
    expect(s).toMatchObject({ quietMs: 400, tickMs: 100, checkConcurrency: 1, hints: { poll: true } });
    expect(resolveWatchSettings({ dir: '/in', onReady, quietMs: 1 }).tickMs).toBe(25);
    expect(resolveWatchSettings({ dir: '/in', onReady }).tickMs).toBe(1_000);
  });

  it('turn the file events off with hints: false', () => {
    expect(resolveWatchSettings({ dir: '/in', onReady, hints: false, poll: true }).hints).toBeNull();
  });
});
