/**
 * What the store's shared parts (item-rows.ts, tables.ts, engine.ts) ask of a database: run one
 * statement on a connection or inside a transaction. A statement is written once, with PostgreSQL's
 * numbered placeholders (`$1`, `$2`, a number used as often as needed); the SQLite adapter binds them
 * by number (sqlite/sqlite-sql.ts). Its words that differ by dialect come from the dialect's plans.
 */
import type { Step } from './step.ts';

/** One connection, or one transaction's. */
export interface Sql {
  /** The rows `text` answers (none for a statement that answers nothing). */
  all<R>(text: string, params: readonly unknown[]): Step<R[]>;
  /** Runs `text`; how many rows it changed. */
  run(text: string, params: readonly unknown[]): Step<number>;
}

/** The words of the statements that differ by dialect (statements.ts builds the rest around them). */
export interface DialectWords {
  /** The text of JSON field `field` of column `column` (an item's recorded size, its mtime). */
  jsonText(column: string, field: string): string;
  /**
   * The condition that keeps an item update to the row's claim (numbered placeholder `$18`, null: no
   * fence), or '' when the dialect's rows have no claim (one process per out dir).
   */
  claimFence: string;
}
