/**
 * The PostgreSQL store against the Store contract, on a real server (embedded, one per test file), and
 * what only it has: every error names the store without its password.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newItem } from '../../src/pipeline/item.ts';
import { openPostgresStore, redactUrl } from '../../src/pipeline/store/postgres/index.ts';
import { patchItem, withFlatItem } from '../helpers/item-patch.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { defineStoreContract } from './store-contract.ts';

const pg = usePostgres();

/** Each test's out dir gets a schema of its own (the tables of quota, durations… are per database). */
const schemaOf = (outDir: string): string =>
  `t_${createHash('sha256').update(outDir).digest('hex').slice(0, 16)}`;

defineStoreContract('PostgreSQL store', {
  open: (outDir) => openPostgresStore({ url: pg.url(), outDir, schema: schemaOf(outDir), lock: false }),
});

describe('PostgreSQL store writes', () => {
  it('records the saves of one item in the order they were asked for, awaited or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-pg-order-'));
    const store = await openPostgresStore({ url: pg.url(), outDir: dir, schema: schemaOf(dir) });
    try {
      await store.startBatch({ inputDir: dir, service: 'http://svc.test' });
      writeFileSync(join(dir, 'a.png'), 'a');
      const planned = patchItem(newItem('a.png', join(dir, 'a.png'), 1, 1), {
        state: 'planned',
        rule: { index: 0, match: '*' },
        inputAs: 'source',
        request: { type: 'image_edit', prompt: 'p', source: { file_id: '$input' } },
      });
      let it = (await store.admit(planned, { references: {} })).item;
      const saves: Promise<void>[] = [];
      for (let n = 1; n <= 20; n++) {
        it = patchItem(it, {
          state: 'uploaded',
          upload: { mode: 'inline', fileId: `file-${n}`, sha256: null },
        });
        saves.push(store.save(it)); // not awaited: the next is asked for at once
      }
      await Promise.all(saves);
      expect(withFlatItem((await store.get('a.png'))!)).toMatchObject({
        item: { upload: { fileId: 'file-20' } },
      });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('PostgreSQL store connection', () => {
  let outDir: string;
  beforeEach(() => {
    outDir = mkdtempSync(join(tmpdir(), 'genpipe-pg-store-'));
  });
  afterEach(() => rmSync(outDir, { recursive: true, force: true }));

  /** The URL of the file's database with `password` in it. */
  const withPassword = (password: string, port = pg.server().port): string => {
    const url = new URL(pg.url());
    url.password = password;
    url.port = String(port);
    return url.toString();
  };

  it('shows its location without the password', async () => {
    const password = new URL(pg.url()).password;
    const store = await openPostgresStore({ url: pg.url(), outDir, lock: false });
    try {
      expect(store.location).not.toContain(password);
      expect(store.location).toContain('***');
    } finally {
      await store.close();
    }
  });

  it('names the store but never the password when the password is wrong', async () => {
    const password = 'wrong-Secret-4711';
    const err = await openPostgresStore({ url: withPassword(password), outDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const text = `${(err as Error).message} ${(err as Error).stack} ${JSON.stringify(err)}`;
    expect(text).not.toContain(password);
    expect((err as Error).message).toContain('password authentication failed');
    expect((err as Error).message).toContain('***');
    expect(err).toMatchObject({ code: '28P01' });
  });

  it('names the store but never the password when the server cannot be reached', async () => {
    const password = 'unreachable-Secret-0815';
    const url = withPassword(password, 1); // nothing listens on port 1
    const err = await openPostgresStore({ url, outDir }).catch((e: unknown) => e);
    const text = `${(err as Error).message} ${(err as Error).stack} ${JSON.stringify(err)}`;
    expect(text).not.toContain(password);
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect((err as Error).message).toContain(redactUrl(url));
  });

  it('redacts a password in the URL, in a parameter, and in a key=value string', () => {
    expect(redactUrl('postgres://u:p%40ss@db:5432/x')).toBe('postgres://u:***@db:5432/x');
    expect(redactUrl('postgres://u@db/x?password=hunter2&sslmode=require')).not.toContain('hunter2');
    expect(redactUrl("host=db user=u password='a b c' dbname=x")).toBe(
      'host=db user=u password=*** dbname=x',
    );
    expect(redactUrl('postgres://db/x')).toBe('postgres://db/x');
  });
});
