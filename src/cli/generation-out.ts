/**
 * Where the CLI saves a generation's outputs under `--out DIR`, in one place for `generate`,
 * `generations download` and `legacy modify`: `DIR/<generation id>/`, one folder per generation, so a
 * download into a DIR already used never overwrites another generation's outputs.
 *
 * Downloading the same generation into the same DIR again downloads it again: each file is written to
 * `<name>.part` and renamed over the earlier one when complete (never half-written), and each file that
 * replaced one is said so — a note on stderr, `replaced: true` in the JSON.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DownloadedOutput, DownloadOptions } from '../client/index.ts';
import { formatBytes } from '../pipeline/progress/format.ts';
import type { CommandContext, ProgressLine } from './make-client.ts';

/** A downloaded output, and whether it replaced a file of the same name (an earlier download). */
export interface SavedOutput extends DownloadedOutput {
  replaced: boolean;
}

/** The texts of a download's notes. */
export const GENERATION_OUT_TEXTS = {
  saved: (path: string, bytes: number) => `saved ${path} (${formatBytes(bytes)})`,
  replaced: (path: string, bytes: number) =>
    `replaced ${path} with the same generation's output downloaded again (${formatBytes(bytes)})`,
  badId: (id: string) =>
    `the generation id ${JSON.stringify(id)} cannot name a folder: outputs are saved in <out>/<generation id>/`,
} as const;

/**
 * The folder of a generation's outputs under an out dir: `<outDir>/<generation id>/`.
 *
 * @throws Error when the id is not a plain folder name (empty, `.`/`..`, a path separator)
 * @example generationFolder('out', '6f1c0a52-1111-4222-8333-444455556666') // 'out/6f1c0a52-…'
 */
export function generationFolder(outDir: string, generationId: string): string {
  if (generationId === '' || generationId === '.' || generationId === '..' || /[/\\\0]/.test(generationId)) {
    throw new Error(GENERATION_OUT_TEXTS.badId(generationId));
  }
  return join(outDir, generationId);
}

async function namesIn(dir: string): Promise<Set<string>> {
  try {
    return new Set(await readdir(dir));
  } catch {
    return new Set();
  }
}

/**
 * Downloads a generation's outputs into its folder under `outDir` (see {@link generationFolder}) with a
 * progress line per output on a terminal and a note per saved file.
 *
 * @param download - the client's download of this generation into a folder
 * @example await saveGenerationOutputs(ctx, g, 'out', (dir, o) => ctx.client.generations.download(g, dir, o));
 */
export async function saveGenerationOutputs(
  ctx: CommandContext,
  generation: { id: string },
  outDir: string,
  download: (dir: string, options: DownloadOptions) => Promise<DownloadedOutput[]>,
): Promise<SavedOutput[]> {
  const dir = generationFolder(outDir, generation.id);
  const before = await namesIn(dir);
  const shown: { index: number; line: ProgressLine | null } = { index: -1, line: null };
  try {
    const outputs = await download(dir, {
      signal: ctx.signal,
      onProgress: (p) => {
        if (shown.index !== p.index || !shown.line) {
          shown.line?.end();
          shown.index = p.index;
          shown.line = ctx.progress(`downloading ${p.name}`);
        }
        shown.line.update(p.bytes, p.totalBytes);
      },
    });
    shown.line?.end();
    shown.line = null;
    const saved = outputs.map((o) => ({ ...o, replaced: before.has(o.name) }));
    for (const o of saved) {
      ctx.note(
        o.replaced
          ? GENERATION_OUT_TEXTS.replaced(o.path, o.bytes)
          : GENERATION_OUT_TEXTS.saved(o.path, o.bytes),
      );
    }
    return saved;
  } finally {
    shown.line?.end();
  }
}

/** What a create command's --wait and --out ask for (--timeout in seconds). */
export interface WaitOutFlags {
  wait?: boolean;
  out?: string;
  timeout?: number;
}

/**
 * A create command's end, for `generate` and every `legacy` create alike: with --wait or --out, note
 * the wait (and what collects the generation when interrupted), wait for it, and with --out download
 * its outputs into `<out>/<generation id>/`.
 *
 * @param how.created - the note's words for the created generation (`generation <id> (request id …)`)
 * @param how.interrupted - what to say when the command is interrupted while waiting (none: no note)
 * @param how.wait - the client's wait, given the --timeout in ms
 * @param how.download - the client's download of the finished generation into a folder
 * @returns the generation as it ended (or as created, without --wait/--out), and the saved outputs
 */
export async function waitAndSave<G extends { id: string }>(
  ctx: CommandContext,
  created: G,
  flags: WaitOutFlags,
  how: {
    created: string;
    interrupted?: string;
    wait: (timeoutMs: number | undefined) => Promise<G>;
    download: (generation: G, dir: string, options: DownloadOptions) => Promise<DownloadedOutput[]>;
  },
): Promise<{ final: G; outputs: SavedOutput[] | null }> {
  if (flags.wait !== true && flags.out === undefined) return { final: created, outputs: null };
  ctx.note(`created ${how.created}; waiting`);
  if (how.interrupted !== undefined) ctx.ifInterrupted(how.interrupted);
  const final = await how.wait(flags.timeout === undefined ? undefined : flags.timeout * 1000);
  if (flags.out === undefined) return { final, outputs: null };
  const outputs = await saveGenerationOutputs(ctx, final, flags.out, (dir, o) => how.download(final, dir, o));
  return { final, outputs };
}
