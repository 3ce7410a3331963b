/**
 * A page's stream resumes after its snapshot: a file that changed between the page's snapshot and
 * its stream's opening (a change another page's stream, or none, was sent) reaches it first thing.
 * Over real HTTP against startDashboardServer.
 */
import { expect, it } from 'vitest';
import { DashboardModel } from '../../src/pipeline/dashboard/index.ts';
import { serveModel } from './dashboard-helpers.ts';

it('sends a page what changed between its snapshot and its stream', async () => {
  const model = new DashboardModel('watch');
  model.apply({
    type: 'item_state',
    at: 1_000,
    input: 'a.txt',
    state: 'submitted',
    stage: 'submit',
    reason: null,
  });
  const server = await serveModel(model);
  const abort = new AbortController();
  try {
    const snapshot = await (await fetch(`${server.url}api/snapshot`)).json();
    expect(snapshot.rows[0].status).toBe('pending');
    // The file ends, and that change is streamed before this page's stream is open (to no one).
    model.apply({
      type: 'item_state',
      at: 2_000,
      input: 'a.txt',
      state: 'reported',
      stage: 'report',
      reason: null,
    });
    model.takeChanges();
    const res = await fetch(`${server.url}api/events?after=${snapshot.seq}`, { signal: abort.signal });
    const reader = res.body!.getReader();
    let text = '';
    while (!/^data: /m.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const message = JSON.parse(/^data: (.*)$/m.exec(text)![1]!);
    expect(message.rows.map((r: { input: string; status: string }) => [r.input, r.status])).toEqual([
      ['a.txt', 'succeeded'],
    ]);
  } finally {
    abort.abort();
    await server.close();
  }
});
