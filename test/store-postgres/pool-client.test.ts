/**
 * A store connection the server cuts while it is out of the pool (PostgreSQL shut down mid-query) fails
 * the call it was made for and nothing else: no 'error' event without a listener, which would end the
 * process (a worker died this way in one outage of two).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPool, withPoolClient } from '../../src/pipeline/store/postgres/connection.ts';
import { usePostgres } from '../helpers/postgres.ts';

const db = usePostgres();
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: db.url() });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
});

describe('withPoolClient', () => {
  it('a connection terminated while checked out fails the call, not the process, and is not reused', async () => {
    const pool = openPool(db.url(), 'public', () => undefined);
    try {
      const cut = withPoolClient(pool, async (client) => {
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        // The client has emitted its 'error' (then 'end') by now: had nobody listened, the process would be gone.
        await ended;
        await client.query('SELECT 1');
      });
      await expect(cut).rejects.toThrow();
      // The pool hands out a working connection next.
      const { rows } = await withPoolClient(pool, (c) => c.query<{ one: number }>('SELECT 1 AS one'));
      expect(rows[0]!.one).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
