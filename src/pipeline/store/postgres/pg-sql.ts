/** The store's statements (../sql.ts) run on a PostgreSQL connection or a transaction's client. */

import type { Sql } from '../sql.ts';
import { type Step, waitFor } from '../step.ts';
import type { Queryable } from './connection.ts';

/** The store's statements run on a connection or a transaction's client. */
export class PgSql implements Sql {
  constructor(private readonly q: Queryable) {}

  all<R>(text: string, params: readonly unknown[]): Step<R[]> {
    return waitFor(this.q.query(text, [...params]).then((r) => r.rows as R[]));
  }

  run(text: string, params: readonly unknown[]): Step<number> {
    return waitFor(this.q.query(text, [...params]).then((r) => r.rowCount ?? 0));
  }
}
