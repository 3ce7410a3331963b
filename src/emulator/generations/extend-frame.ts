/** The frame a video extend continues from: the last frame (forward) or the first frame (reverse). */
import { runFfmpeg } from '../../media/index.ts';

/**
 * Writes one frame of `videoPath` as a PNG at `outPath`: the last frame for a forward extend
 * (generation_id in video.start_frame), the first for a reverse extend (in video.end_frame).
 */
export async function extractFrame(
  videoPath: string,
  which: 'first' | 'last',
  outPath: string,
  signal?: AbortSignal,
): Promise<string> {
  const args =
    which === 'first'
      ? ['-i', videoPath, '-frames:v', '1', outPath]
      : // Decode only the final second; -update keeps overwriting, so the file ends as the last frame.
        ['-sseof', '-1', '-i', videoPath, '-update', '1', outPath];
  await runFfmpeg(args, { signal, what: 'extend frame could not be extracted' });
  return outPath;
}
