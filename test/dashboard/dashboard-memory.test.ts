/**
 * The dashboard in a long watch keeps a bounded detail: the transitions of the HISTORY_FILES files
 * changed last, not of every file ever seen (each file's row stays, and its result.json). Driven over
 * real HTTP: a model fed a watch's events for more files than that, served by startDashboardServer.
 */
import { expect, it } from 'vitest';
import { DashboardModel, HISTORY_FILES } from '../../src/pipeline/dashboard/index.ts';
import type { ItemState } from '../../src/pipeline/item.ts';
import { serveModel } from './dashboard-helpers.ts';

const STATES: ItemState[] = [
  'discovered',
  'sniffed',
  'planned',
  'submitted',
  'completed',
  'downloaded',
  'reported',
];

it('keeps the steps of the files changed last only, however many files a watch sees', async () => {
  const model = new DashboardModel('watch');
  const files = HISTORY_FILES + 500;
  for (let i = 0; i < files; i++) {
    for (const [k, state] of STATES.entries()) {
      model.apply({
        type: 'item_state',
        at: 1_000 + i * 10 + k,
        input: `f${i}.txt`,
        state,
        stage: null,
        reason: null,
      });
    }
  }
  const server = await serveModel(model);
  try {
    const detail = async (id: number) => (await fetch(`${server.url}api/files/${id}`)).json();
    // The first file's steps are dropped (its row is still there); the last file's are all kept.
    const first = await detail(1);
    expect(first.row.input).toBe('f0.txt');
    expect(first.row.status).toBe('succeeded');
    expect(first.history).toBeNull();
    const last = await detail(files);
    expect(last.history.map((s: { state: string }) => s.state)).toEqual(STATES);
    expect((await detail(files - HISTORY_FILES + 1)).history).toHaveLength(STATES.length);
    expect((await detail(files - HISTORY_FILES)).history).toBeNull();
    // Every file still counted and listed.
    const snapshot = await (await fetch(`${server.url}api/snapshot`)).json();
    expect(snapshot.counts.succeeded).toBe(files);
    expect(snapshot.rows).toHaveLength(files);
  } finally {
    await server.close();
  }
});
