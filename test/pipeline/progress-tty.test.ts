import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PipelineEvent } from '../../src/pipeline/events.ts';
import { ITEM_STATES } from '../../src/pipeline/item.ts';
import {
  applyEvent,
  createRedactor,
  createTtyProgress,
  etaMs,
  newProgressState,
  type ProgressState,
  progressCounts,
  renderTty,
  throughputPerMinute,
} from '../../src/pipeline/progress/index.ts';
import { STAGE_OF_STATE } from '../../src/pipeline/progress/progress-state.ts';

const T = Date.UTC(2026, 0, 2, 12, 0, 0);
const KEY = 'svc-api-0123456789abcdef';

function discovered(input: string, at = T): PipelineEvent {
  return { type: 'item_discovered', at, input, size: 10 };
}
function moved(input: string, state: (typeof ITEM_STATES)[number], at: number, reason: string | null = null) {
  return { type: 'item_state', at, input, state, stage: null, reason } satisfies PipelineEvent;
}

/** Ten files 30 s into a batch: 3 done (one each succeeded, failed, skipped), 7 at various stages. */
function midBatch(): ProgressState {
  const s = newProgressState();
  applyEvent(s, { type: 'batch_started', at: T, input_dir: 'in', out_dir: 'out', emulator: false });
  for (let i = 0; i < 10; i++) applyEvent(s, discovered(`f${i}.jpg`));
  applyEvent(s, moved('f0.jpg', 'reported', T + 10_000));
  applyEvent(s, moved('f1.jpg', 'failed', T + 20_000, 'too big'));
  applyEvent(s, moved('f2.jpg', 'skipped', T + 30_000, 'no rule'));
  applyEvent(s, moved('f3.jpg', 'submitted', T + 5000));
  applyEvent(s, moved('f4.jpg', 'submitted', T + 5000));
  applyEvent(s, moved('f5.jpg', 'sniffed', T + 5000));
  return s;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the TTY renderer', () => {
  it('shows counts per stage and outcome, throughput and an ETA', () => {
    const s = midBatch();
    expect(throughputPerMinute(s, T + 30_000)).toBeCloseTo(6, 5);
    expect(etaMs(s, T + 30_000)).toBeCloseTo(70_000, 0);
    const lines = renderTty(s, { columns: 120, now: T + 30_000 });
    expect(lines).toEqual([
      `genpipe ${'█'.repeat(9)}${'░'.repeat(21)}  3/10  30%  elapsed 30.0s  ETA 1m10s  6.0 items/min`,
      'stages   sniff 4  plan 1  check 0  upload 0  submit 0  wait 2  download 0  report 0',
      'results  succeeded 1  failed 1  skipped 1',
    ]);
  });

  it('fits every line in the terminal width', () => {
    const s = midBatch();
    for (const columns of [30, 50, 80]) {
      const lines = renderTty(s, { columns, now: T + 30_000 });
      for (const l of lines) expect([...l].length).toBeLessThanOrEqual(columns - 1);
      expect(lines[1]!.endsWith('…')).toBe(true);
    }
    // Narrow terminals drop the bar but keep the numbers.
    expect(renderTty(s, { columns: 50, now: T + 30_000 })[0]).toMatch(/^genpipe {2}3\/10 {2}30%/);
  });

  it('says when it cannot tell the ETA yet, when it is stopping, and when it is done', () => {
    const s = newProgressState();
    applyEvent(s, { type: 'batch_started', at: T, input_dir: 'in', out_dir: 'out', emulator: true });
    applyEvent(s, discovered('a.jpg'));
    expect(renderTty(s, { columns: 100, now: T + 2000 })[0]).toContain('ETA —  — items/min');
    expect(renderTty(s, { columns: 100, now: T })[0]!.startsWith('genpipe [EMULATOR]')).toBe(true);
    applyEvent(s, { type: 'batch_stopping', at: T + 3000, reason: 'Invalid API key' });
    applyEvent(s, moved('a.jpg', 'stopped', T + 3000));
    const stopping = renderTty(s, { columns: 100, now: T + 3000 });
    expect(stopping[2]).toBe('results  succeeded 0  failed 0  skipped 0  not processed 1');
    expect(stopping[3]).toBe('stopping early: Invalid API key');
    applyEvent(s, {
      type: 'batch_finished',
      at: T + 4000,
      totals: { inputs: 1, succeeded: 0, failed: 0, skipped: 0, unprocessed: 1 },
    });
    const done = renderTty(s, { columns: 100, now: T + 60_000 });
    expect(done[0]).toContain('1/1  100%  done in 4.0s');
    expect(done[0]).not.toContain('ETA');
    expect(done).toHaveLength(3);
  });

  it('counts each out folder once, so two versions of one file name count twice, as the report does', () => {
    const s = newProgressState();
    const at = (input: string, place: string | undefined, state: (typeof ITEM_STATES)[number]) =>
      applyEvent(s, { ...moved(input, state, T + 1000), ...(place ? { place } : {}) });
    applyEvent(s, discovered('scan.png'));
    at('scan.png', undefined, 'planned');
    at('scan.png', 'scan.png', 'planned');
    at('scan.png', 'scan.png', 'reported');
    // Another scan.png: a new look at the input until the journal places it in a folder of its own.
    applyEvent(s, discovered('scan.png'));
    expect(progressCounts(s)).toMatchObject({ total: 2, done: 1, succeeded: 1 });
    at('scan.png', undefined, 'planned');
    at('scan.png', 'scan-1.png', 'submitted');
    at('scan.png', 'scan-1.png', 'reported');
    expect(progressCounts(s)).toMatchObject({ total: 2, done: 2, succeeded: 2 });
    expect(s.recentDone).toHaveLength(2);
    // A version that takes over the folder of one the service made nothing for replaces it.
    applyEvent(s, discovered('bad.png'));
    at('bad.png', 'bad.png', 'failed');
    applyEvent(s, discovered('bad.png'));
    at('bad.png', 'bad.png', 'planned');
    expect(progressCounts(s)).toMatchObject({ total: 3, done: 2, failed: 0 });
    at('bad.png', 'bad.png', 'reported');
    expect(progressCounts(s)).toMatchObject({ total: 3, done: 3, succeeded: 3 });
  });

  it('maps every unfinished state to the stage it waits for', () => {
    const finals = ['reported', 'skipped', 'failed', 'stopped'];
    for (const st of ITEM_STATES) {
      if (!finals.includes(st)) expect(STAGE_OF_STATE[st], st).toBeDefined();
    }
  });
});

describe('the live TTY display', () => {
  it('redraws in place at most every 100 ms, keeps failures above, and masks secrets', () => {
    vi.useFakeTimers({ now: T });
    const writes: string[] = [];
    const progress = createTtyProgress(
      { isTTY: true, columns: 100, write: (c: string) => writes.push(c) },
      { redact: createRedactor([KEY]) },
    );
    progress.sink({ type: 'batch_started', at: T, input_dir: 'in', out_dir: 'out', emulator: false });
    expect(writes).toHaveLength(1); // the first event draws at once
    expect(writes[0]!.startsWith('\r')).toBe(false);
    for (let i = 0; i < 50; i++) progress.sink(discovered(`f${i}.jpg`));
    progress.sink(moved('f1.jpg', 'failed', T, `Invalid API key (${KEY})`));
    expect(writes).toHaveLength(1); // throttled
    vi.advanceTimersByTime(100);
    expect(writes).toHaveLength(2); // one redraw for the 51 events
    const redraw = writes[1]!;
    expect(redraw.startsWith('\r\u001b[3A\u001b[0J')).toBe(true);
    expect(redraw).toContain('✗ f1.jpg: failed: Invalid API key ([redacted])\n');
    expect(redraw).toContain('1/50');
    expect(writes.join('')).not.toContain(KEY);

    // Without events, the clock still ticks about once a second.
    vi.advanceTimersByTime(1000);
    expect(writes).toHaveLength(3);
    expect(writes[2]).toContain('elapsed 1.0s');

    progress.close();
    expect(writes).toHaveLength(4); // close draws the final block
    vi.advanceTimersByTime(5000);
    progress.sink(discovered('late.jpg'));
    expect(writes).toHaveLength(4); // nothing after close
  });
});
