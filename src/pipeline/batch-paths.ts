/**
 * Where a batch may write, against what it reads: the out dir and the journal must lie outside the
 * input tree (the input dir is never modified), and the input dir outside the out dir (outputs go to
 * `<out>/<input path>/`, which would then land among the inputs). Judged on real paths, so a relative
 * spelling or a symbolic link to the same folder is caught too, as rclone refuses a source and a
 * destination that overlap. The folders `watch --on-done move` files inputs in (processed/ and failed/
 * beside the inbox) hold inputs too: the out dir must lie apart from them as well, or outputs and moved
 * inputs would mix there. `run` and `watch` refuse through this one check; so does the watcher.
 */
import { resolve, sep } from 'node:path';
import { futureRealpath } from './discover.ts';

/** How the refusals name the input dir and what they ask for. */
export interface OverlapWords {
  /** `input dir`, `watched folder`. */
  folder: string;
  /** The rule and what to do instead. */
  rule: string;
}

/** The words of `run` and `watch`. */
export const OVERLAP_WORDS = {
  run: {
    folder: 'input dir',
    rule: 'outputs must live outside the input tree, which is never modified (pick an out dir beside it)',
  },
  watch: {
    folder: 'watched folder',
    rule: 'outputs must live outside the watched tree (pick an out dir beside the inbox)',
  },
} as const satisfies Record<string, OverlapWords>;

/** Why the out dir must lie apart from the folders `--on-done move` files inputs in. */
const MOVE_RULE =
  'outputs and moved inputs would mix there (pick an out dir beside the inbox other than processed/ and failed/)';

/** The refusals, naming both paths. */
export const OVERLAP_TEXTS = {
  same: (out: string, dir: string, w: OverlapWords) =>
    `the out dir and the ${w.folder} are the same folder (${out}, ${dir}): ${w.rule}`,
  outInside: (out: string, dir: string, w: OverlapWords) =>
    `the out dir ${out} is inside the ${w.folder} ${dir}: ${w.rule}`,
  inputInside: (out: string, dir: string, w: OverlapWords) =>
    `the ${w.folder} ${dir} is inside the out dir ${out}: ${w.rule}`,
  outIsMoveTarget: (out: string, target: string) =>
    `the out dir ${out} is the folder --on-done move files inputs in${out === target ? '' : ` (${target})`}: ${MOVE_RULE}`,
  outInsideMoveTarget: (out: string, target: string) =>
    `the out dir ${out} is inside ${target}, the folder --on-done move files inputs in: ${MOVE_RULE}`,
  moveTargetInside: (out: string, target: string) =>
    `${target}, the folder --on-done move files inputs in, is inside the out dir ${out}: ${MOVE_RULE}`,
  journalInside: (journal: string, dir: string, w: OverlapWords) =>
    `the journal ${journal} is inside the ${w.folder} ${dir}: it must live outside the ${w.folder} (the default, <out>/.genpipe/journal.db, does)`,
  logFileInside: (log: string, dir: string, w: OverlapWords) =>
    `the log file ${log} is inside the ${w.folder} ${dir}: it must live outside the ${w.folder} (genpipe never writes in it)`,
} as const;

function isInside(root: string, p: string): boolean {
  return p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** A path as given (made absolute), and its real path too when a link makes them differ. */
async function named(path: string): Promise<{ real: string; shown: string }> {
  const given = resolve(path);
  const real = await futureRealpath(path);
  return { real, shown: real === given ? given : `${given} (really ${real})` };
}

/**
 * Why the out dir (or the journal) and the input dir overlap, or null when they are apart.
 *
 * @param opts.inputDir - the folder read
 * @param opts.outDir - where outputs and reports go
 * @param opts.journal - `--journal PATH`, when given
 * @param opts.words - how to name the input dir (OVERLAP_WORDS.run by default)
 * @param opts.moveTargets - the folders inputs are moved to (`watch --on-done move`: onDoneTargets)
 * @example await overlapRefusal({ inputDir: 'mine', outDir: 'mine/sub/o' })
 * // 'the out dir /home/me/mine/sub/o is inside the input dir /home/me/mine: outputs must live outside …'
 */
export async function overlapRefusal(opts: {
  inputDir: string;
  outDir: string;
  journal?: string;
  words?: OverlapWords;
  moveTargets?: readonly string[];
}): Promise<string | null> {
  const words = opts.words ?? OVERLAP_WORDS.run;
  const input = await named(opts.inputDir);
  const out = await named(opts.outDir);
  if (out.real === input.real) return OVERLAP_TEXTS.same(out.shown, input.shown, words);
  if (isInside(input.real, out.real)) return OVERLAP_TEXTS.outInside(out.shown, input.shown, words);
  if (isInside(out.real, input.real)) return OVERLAP_TEXTS.inputInside(out.shown, input.shown, words);
  for (const path of opts.moveTargets ?? []) {
    const target = await named(path);
    if (out.real === target.real) return OVERLAP_TEXTS.outIsMoveTarget(out.shown, target.shown);
    if (isInside(target.real, out.real)) return OVERLAP_TEXTS.outInsideMoveTarget(out.shown, target.shown);
    if (isInside(out.real, target.real)) return OVERLAP_TEXTS.moveTargetInside(out.shown, target.shown);
  }
  if (opts.journal !== undefined) {
    const journal = await named(opts.journal);
    if (journal.real === input.real || isInside(input.real, journal.real)) {
      return OVERLAP_TEXTS.journalInside(journal.shown, input.shown, words);
    }
  }
  return null;
}

/**
 * Why `--log-file` may not be where it is (inside the input dir, where it would be written among the
 * inputs), or null. Checked before the log is opened, as the log is opened before anything else.
 *
 * @example await logFileRefusal({ inputDir: 'mine', logFile: 'mine/run.log' })
 * // 'the log file /home/me/mine/run.log is inside the input dir /home/me/mine: it must live outside …'
 */
export async function logFileRefusal(opts: {
  inputDir: string;
  logFile: string;
  words?: OverlapWords;
}): Promise<string | null> {
  const input = await named(opts.inputDir);
  const log = await named(opts.logFile);
  if (log.real !== input.real && !isInside(input.real, log.real)) return null;
  return OVERLAP_TEXTS.logFileInside(log.shown, input.shown, opts.words ?? OVERLAP_WORDS.run);
}
