/**
 * What the watcher hands over (ReadyFile), how it is made from a tracked file and its completeness
 * verdict, and how the runner turns it into an Item (with the reason to fail a file handed over
 * incomplete).
 */
import { type Item, newItem } from '../item.ts';
import type { CompleteVerdict } from './complete-check.ts';
import { WATCH_TEXTS } from './defaults.ts';
import type { TrackedFile } from './stability.ts';

/** A file handed over by the watcher. */
export interface ReadyFile {
  /** Path relative to the watched folder, '/'-separated (the item's identity). */
  input: string;
  absPath: string;
  /** Size and mtime at hand-over; the file was unchanged through the quiet period and the check. */
  size: number;
  mtimeMs: number;
  /** What the completeness check sniffed; null when it could not tell. */
  kind: 'image' | 'video' | 'other' | null;
  mime: string | null;
  /**
   * True when the completeness check passed. False when handed over after the give-up period without
   * passing: `reason` then says why, and the pipeline's check fails the file with its own reason.
   */
  complete: boolean;
  reason: string | null;
  /** 1 the first time; 2, 3, … when handed over again after it changed. */
  handover: number;
  /**
   * True when handed over at once because `known` said it was finished with this size and mtime (no
   * quiet period, no completeness check: `complete` is then true and `kind` null).
   */
  known: boolean;
  /** When the watcher first saw the file, and when it handed it over (ms since the epoch). */
  firstSeenAt: number;
  readyAt: number;
  /**
   * Set for a file discovery failed before any stage (a name that is not valid UTF-8, see
   * raw-names.ts): its item, failed with the reason; handed over at once, unchecked.
   */
  failed?: Item;
}

/** Why a file is handed over: its check passed, the give-up period passed, or `known` named it. */
export type HandOverCause = 'checked' | 'gaveUp' | 'known';

/**
 * The ReadyFile of `f` (already marked handed in the tracker), handed over at `now` for `cause`, with
 * the verdict of its last completeness check (none for a known file).
 */
export function readyFileOf(
  f: TrackedFile,
  verdict: CompleteVerdict | undefined,
  cause: HandOverCause,
  now: number,
): ReadyFile {
  return {
    input: f.input,
    absPath: f.absPath,
    size: f.size,
    mtimeMs: f.mtimeMs,
    kind: verdict?.kind ?? null,
    mime: verdict?.mime ?? null,
    complete: cause === 'known' || (cause === 'checked' && verdict?.complete === true),
    reason: verdict && !verdict.complete ? verdict.reason : null,
    handover: f.handovers,
    known: cause === 'known',
    firstSeenAt: f.firstSeenAt,
    readyAt: now,
  };
}

/** The ReadyFile of an item discovery failed before any stage (ReadyFile.failed), handed over at `now`. */
export function failedReadyFile(item: Item, now: number): ReadyFile {
  return {
    input: item.input,
    absPath: item.absPath,
    size: item.size,
    mtimeMs: item.mtimeMs,
    kind: null,
    mime: null,
    complete: true,
    reason: null,
    handover: 1,
    known: false,
    firstSeenAt: now,
    readyAt: now,
    failed: item,
  };
}

/**
 * A pipeline Item (state `discovered`) for a handed-over file, for the runner (the failed item of a
 * file handed over failed, see ReadyFile.failed). For a file handed over
 * after the give-up period (`complete: false`), {@link incompleteReason} is the reason to fail it with
 * once a recipe rule claims it (at the check stage, before any upload): the local check alone would let
 * a half-copied faststart MP4 through, since ffprobe reads only its headers.
 */
export function readyItem(file: ReadyFile): Item {
  if (file.failed) return file.failed;
  return newItem(file.input, file.absPath, file.size, file.mtimeMs);
}

/** The failure reason for a file handed over incomplete; null when it is complete. */
export function incompleteReason(file: ReadyFile): string | null {
  return file.complete ? null : WATCH_TEXTS.neverComplete(file.reason ?? 'unknown');
}
