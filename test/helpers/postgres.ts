/**
 * A real PostgreSQL for a test file: one embedded server (src/pipeline/store/postgres/embedded.ts) per
 * file that asks for it, started before its tests and stopped after them, each on its own port and in
 * its own folder (so files running at the same time in vitest's workers never meet), with a fresh
 * database for the file. Tests that need more separation make a database each (freshDatabase).
 *
 * @example
 * const pg = usePostgres();
 * it('…', async () => { const store = await openPostgresStore({ url: pg.url(), outDir }); … });
 */
import { afterAll, beforeAll } from 'vitest';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/pipeline/store/postgres/embedded.ts';

/** The file's server, once started. */
export interface TestPostgres {
  /** The connection string of the file's database (holds the password). */
  url(): string;
  /** The server itself (its port, its folder, how long it took to start). */
  server(): EmbeddedPostgres;
  /** A new, empty database on the file's server; its connection string. */
  freshDatabase(): Promise<string>;
}

let databases = 0;

/** Starts a server for this test file (beforeAll) and stops it (afterAll). */
export function usePostgres(): TestPostgres {
  let server: EmbeddedPostgres | null = null;
  let url: string | null = null;
  const fresh = async (): Promise<string> => {
    if (!server) throw new Error('usePostgres: the server is not started (use it inside a test)');
    databases += 1;
    return server.createDatabase(`test_${process.pid}_${databases}`);
  };
  beforeAll(async () => {
    server = await startEmbeddedPostgres({ volatile: true });
    url = await fresh();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    url: () => {
      if (!url) throw new Error('usePostgres: the server is not started (use it inside a test)');
      return url;
    },
    server: () => {
      if (!server) throw new Error('usePostgres: the server is not started (use it inside a test)');
      return server;
    },
    freshDatabase: fresh,
  };
}
