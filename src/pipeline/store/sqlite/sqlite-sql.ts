/**
 * The store's statements (../sql.ts: numbered placeholders `$1`, `$2`, …) run on a better-sqlite3
 * connection, synchronously: each text is prepared once, its placeholders turned into SQLite's `?`
 * and bound by number (a number used twice is bound twice).
 */
import type Database from 'better-sqlite3';
import type { Sql } from '../sql.ts';
import { at, type Step } from '../step.ts';

interface Prepared {
  stmt: Database.Statement;
  /** The parameter number (1-based) of each `?`, in order. */
  order: number[];
}

/** A statement's text with `?` for each numbered placeholder, and the numbers in order. */
export function sqliteText(text: string): { text: string; order: number[] } {
  const order: number[] = [];
  const out = text.replace(/\$(\d+)/g, (_, n: string) => {
    order.push(Number(n));
    return '?';
  });
  return { text: out, order };
}

/** See the module comment. */
export class SqliteSql implements Sql {
  private readonly prepared = new Map<string, Prepared>();

  constructor(private readonly db: Database.Database) {}

  private bound(text: string, params: readonly unknown[]): { stmt: Database.Statement; args: unknown[] } {
    let p = this.prepared.get(text);
    if (!p) {
      const converted = sqliteText(text);
      p = { stmt: this.db.prepare(converted.text), order: converted.order };
      this.prepared.set(text, p);
    }
    return { stmt: p.stmt, args: p.order.map((n) => params[n - 1] ?? null) };
  }

  all<R>(text: string, params: readonly unknown[]): Step<R[]> {
    const { stmt, args } = this.bound(text, params);
    if (!stmt.reader) {
      stmt.run(...args);
      return at([]);
    }
    return at(stmt.all(...args) as R[]);
  }

  run(text: string, params: readonly unknown[]): Step<number> {
    const { stmt, args } = this.bound(text, params);
    if (stmt.reader) return at(stmt.all(...args).length);
    return at(stmt.run(...args).changes);
  }
}
