/**
 * A video with an audio track added: the video stream copied as is, plus an AAC track of a tone whose
 * pitch is seeded by the prompt, as long as the video.
 */
import { probeVideo, runFfmpeg } from '../../media/index.ts';
import { writeAtomically } from './output-file.ts';
import { rngFor } from './seed.ts';

/**
 * @param o.sourcePath the silent (or not) video
 * @param o.prompt seeds the tone (same prompt, same sound)
 * @example await addAudio({ sourcePath: 'in.mp4', prompt: 'rain', outPath: 'out.mp4' })
 */
export async function addAudio(o: {
  sourcePath: string;
  prompt: string;
  outPath: string;
  signal?: AbortSignal;
}): Promise<{ path: string; mime: string; durationSeconds: number }> {
  const probe = await probeVideo(o.sourcePath);
  const frequency = Math.round(220 + rngFor('add_audio', o.prompt).next() * 660);
  const seconds = probe.durationSeconds.toFixed(3);
  await writeAtomically(o.outPath, (tmp) =>
    runFfmpeg(
      [
        ...['-i', o.sourcePath, '-f', 'lavfi', '-i', `sine=frequency=${frequency}:duration=${seconds}`],
        ...['-map', '0:v:0', '-map', '1:a:0', '-c:v', 'copy', '-c:a', 'aac', '-b:a', '64k', '-shortest'],
        ...['-movflags', '+faststart', '-f', 'mp4', tmp],
      ],
      { signal: o.signal, what: 'audio could not be added' },
    ),
  );
  return { path: o.outPath, mime: 'video/mp4', durationSeconds: probe.durationSeconds };
}
