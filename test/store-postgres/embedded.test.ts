/**
 * The embedded PostgreSQL of the tests and the demo: a real server from npm packages, reachable with
 * the password it was given, and gone with its folder once stopped.
 */
import { existsSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/pipeline/store-postgres/embedded.ts';
import { usePostgres } from '../helpers/postgres.ts';

const file = usePostgres();

describe('embedded PostgreSQL', () => {
  it('serves the test file a database of its own', async () => {
    const client = new pg.Client({ connectionString: file.url() });
    await client.connect();
    try {
      const { rows } = await client.query<{ db: string; v: string }>(
        'SELECT current_database() AS db, current_setting($1) AS v',
        ['server_version_num'],
      );
      expect(rows[0]!.db).toMatch(/^test_/);
      expect(Number(rows[0]!.v)).toBeGreaterThanOrEqual(130000); // what BullMQ's backend needs
    } finally {
      await client.end();
    }
  });

  it('runs two servers side by side, each stopped with its folder', async () => {
    const other = await startEmbeddedPostgres({ volatile: true });
    try {
      expect(other.port).not.toBe(file.server().port);
      const client = new pg.Client({ connectionString: await other.createDatabase('side') });
      await client.connect();
      await client.end();
    } finally {
      await other.stop();
    }
    expect(existsSync(other.dir)).toBe(false);
    await expect(
      new pg.Client({ connectionString: other.url, connectionTimeoutMillis: 2_000 }).connect(),
    ).rejects.toThrow();
  });
});
