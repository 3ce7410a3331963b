/**
 * The fence of distributed mode: a worker whose item was admitted again by another worker (it was held
 * up past its lease) has its next write refused — the intent of a create included, so nothing is sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { currentStep, newItem } from '../../src/pipeline/item.ts';
import { ItemTakenOverError } from '../../src/pipeline/store/index.ts';
import { openPostgresStore, type PostgresStore } from '../../src/pipeline/store/postgres/index.ts';
import { patchItem } from '../helpers/item-patch.ts';
import { usePostgres } from '../helpers/postgres.ts';

const pg = usePostgres();

describe('item claims (the fence)', () => {
  const opened: PostgresStore[] = [];
  let dir = '';
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the intent of a worker whose item another worker admitted since, and keeps the other', async () => {
    dir = mkdtempSync(join(tmpdir(), 'genpipe-fence-'));
    const url = await pg.freshDatabase();
    writeFileSync(join(dir, 'a.png'), 'a');
    const planned = patchItem(newItem('a.png', join(dir, 'a.png'), 1, 1), {
      state: 'planned',
      rule: { index: 0, match: '*' },
      inputAs: 'source',
      request: { type: 'image_edit', prompt: 'p', source: { file_id: '$input' } },
    });
    const worker = async (): Promise<PostgresStore> => {
      const s = await openPostgresStore({ url, outDir: join(dir, 'out'), lock: false });
      opened.push(s);
      await s.startBatch({ inputDir: dir, service: 'http://svc.test' });
      return s;
    };
    const a = await worker();
    const b = await worker();
    const first = (await a.admit(planned, { references: {} })).item;
    await a.save({ ...first, state: 'checked' });
    // b takes the item over (a was paused): it resumes it from what a recorded.
    const second = await b.admit(planned, { references: {} });
    expect(second.action).toBe('resume');
    const intentOf = (it: typeof first, id: string) =>
      patchItem({ ...it, state: 'uploaded' }, { requestId: id, attempts: 1 });
    await expect(a.recordIntent(intentOf(first, 'req-a'))).rejects.toBeInstanceOf(ItemTakenOverError);
    await b.recordIntent(intentOf(second.item, 'req-b'));
    const row = await b.get('a.png');
    expect(row ? currentStep(row.item)?.requestId : null).toBe('req-b');
  });
});
