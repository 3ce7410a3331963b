/**
 * Brings the store's schema up to date (pg-plans.ts's MIGRATIONS), in one transaction under an
 * advisory lock, so that workers starting together migrate once; refuses a schema a newer genpipe made.
 */
import type pg from 'pg';
import { connectError, openPool, type StoreConnectionError, withPoolClient } from './connection.ts';
import { MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION } from './pg-plans.ts';

/** The schema was made by a newer genpipe. */
export class StoreSchemaError extends Error {
  override name = 'StoreSchemaError';
}

/** Creates `schema` when missing and migrates it to SCHEMA_VERSION. */
export async function migrateSchema(client: pg.ClientBase, schema: string): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(SCHEMA_SQL.lock, [schema]);
    await client.query(SCHEMA_SQL.createSchema(client.escapeIdentifier(schema)));
    await client.query(SCHEMA_SQL.createMeta);
    const { rows } = await client.query<{ value: string }>(SCHEMA_SQL.version);
    const version = rows[0] ? Number(rows[0].value) : 0;
    if (version > SCHEMA_VERSION) {
      throw new StoreSchemaError(
        `store schema "${schema}" is of version ${version}, made by a newer genpipe (this one knows ${SCHEMA_VERSION})`,
      );
    }
    for (let v = version; v < SCHEMA_VERSION; v++) await client.query(MIGRATIONS[v]!);
    if (version !== SCHEMA_VERSION) await client.query(SCHEMA_SQL.setVersion, [String(SCHEMA_VERSION)]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * A pool of connections to the database at `url` with `schema` brought up to date (created when
 * missing): what the store of an out dir and distributed mode's shared tables open.
 *
 * @throws StoreConnectionError when the database cannot be reached or used (its message holds no password)
 */
export async function openSchemaPool(
  url: string,
  schema: string,
  onError: (err: StoreConnectionError) => void,
): Promise<pg.Pool> {
  const pool = openPool(url, schema, onError);
  try {
    await withPoolClient(pool, (client) => migrateSchema(client, schema), { transaction: false });
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw connectError(err, url);
  }
  return pool;
}
