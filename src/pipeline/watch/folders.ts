/**
 * The folders a watch starts from: the watched folder must be a folder, the out dir neither it nor
 * inside it (checkWatchFolders, which `watch` also asks before it opens the journal); and the rules
 * that say what in it is an input (its real path, the real paths of the files to leave out).
 */
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { OVERLAP_WORDS, overlapRefusal } from '../batch-paths.ts';
import { futureRealpath } from '../discover.ts';
import { WATCH_TEXTS } from './defaults.ts';
import type { WatchSettings } from './options.ts';
import type { PathHintRules } from './path-hint.ts';

/**
 * What startWatcher refuses, checked without starting anything: `dir` must be a folder, and the out dir
 * neither the folder nor inside it. `watch` asks before it opens the journal, which writes in the out dir.
 *
 * @returns the folder's real path
 * @throws Error naming the folder (and the out dir) and the rule
 * @example await checkWatchFolders('inbox', 'out/inbox');
 */
export async function checkWatchFolders(dir: string, outDir?: string): Promise<string> {
  const abs = resolve(dir);
  const st = await stat(abs).catch(() => null);
  if (st === null || !st.isDirectory()) throw new Error(WATCH_TEXTS.notAFolderAtStart(abs));
  const root = await realpath(abs);
  if (outDir !== undefined) {
    const refusal = await overlapRefusal({ inputDir: abs, outDir, words: OVERLAP_WORDS.watch });
    if (refusal !== null) throw new Error(refusal);
  }
  return root;
}

/**
 * The folders checked (checkWatchFolders), and the rules of what is an input there.
 *
 * @throws Error as checkWatchFolders
 */
export async function watchPathRules(
  settings: Pick<WatchSettings, 'dir' | 'outDir' | 'skipFiles' | 'shouldSkip'>,
): Promise<PathHintRules> {
  const root = await checkWatchFolders(settings.dir, settings.outDir);
  const skipFiles = new Set<string>();
  for (const f of settings.skipFiles) skipFiles.add(await futureRealpath(f));
  return { root, skipFiles, shouldSkip: settings.shouldSkip };
}
