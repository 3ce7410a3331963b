/**
 * The names genpipe itself writes at the top of an out dir: the batch reports, their thumbnails and
 * the journal's folder. Each writer takes its name from here, and this one list is what places keep
 * clear of (report/item-paths.ts's folderPlace): an input named like one of them (a client's
 * `report.json`, an earlier export's `report.html`) gets another place, as a second version of a
 * name does, so the batch's own files can always be written.
 */
import { JOURNAL_FILE } from '../store/sqlite/journal-file.ts';

/** File name of the batch report, at the top of the out dir. */
export const REPORT_JSON_FILE = 'report.json';

/** File name of the HTML report, at the top of the out dir. */
export const REPORT_HTML_FILE = 'report.html';

/** Folder of the report's thumbnails, at the top of the out dir. */
export const THUMBS_DIR = '.thumbs';

/** Every name genpipe writes at the top of an out dir (the journal's folder, `.genpipe`, among them). */
export const OUT_DIR_OWN_NAMES: readonly string[] = [
  REPORT_JSON_FILE,
  REPORT_HTML_FILE,
  THUMBS_DIR,
  JOURNAL_FILE.dirName,
];

const OWN = new Set(OUT_DIR_OWN_NAMES.map((n) => n.toLowerCase()));

/**
 * True when `name`, a name at the top of the out dir, is one genpipe writes (ignoring case: an out dir
 * on a case-insensitive file system holds one `report.json` whatever its spelling).
 *
 * @example isOutDirOwnName('Report.JSON') // true
 */
export function isOutDirOwnName(name: string): boolean {
  return OWN.has(name.toLowerCase());
}
