/**
 * Upscale of a video: the same frames scaled so the short side is the asked resolution's (the shape
 * kept), re-encoded on the one 24 fps H.264 path.
 */
import { probeVideo } from '../../media/index.ts';
import { encodeMp4, framesFor } from './encode.ts';
import { frameForShortSide, resolutionShortSide } from './frame-size.ts';
import type { RenderedVideo } from './types.ts';

/**
 * @param o.sourcePath the video to upscale
 * @param o.resolution '<n>p' or '4k': the output's short side
 * @example await upscaleVideo({ sourcePath: 'in.mp4', resolution: '1080p', outPath: 'out.mp4' })
 */
export async function upscaleVideo(o: {
  sourcePath: string;
  resolution: string;
  outPath: string;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  const probe = await probeVideo(o.sourcePath);
  const size = frameForShortSide(resolutionShortSide(o.resolution), probe.width / probe.height);
  const frames = framesFor(probe.durationSeconds);
  return encodeMp4({
    inputArgs: ['-i', o.sourcePath],
    filterGraph: `[0:v]fps=24,tpad=stop_mode=clone:stop=${frames},scale=${size.width}:${size.height}:flags=lanczos,setsar=1,format=yuv420p[v]`,
    frames,
    outPath: o.outPath,
    what: 'video could not be upscaled',
    signal: o.signal,
  });
}
