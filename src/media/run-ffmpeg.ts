/**
 * Running ffmpeg as a child process: arguments as an array (no shell), stdout ignored, stderr kept
 * only as a short tail for the error reason, the process killed when the caller aborts.
 */
import { spawn } from 'node:child_process';
import { ffmpegPath } from './ffmpeg-path.ts';
import { MediaError, plainWhy } from './media-error.ts';

export interface RunFfmpegOptions {
  /** Kills ffmpeg (SIGKILL) and rejects with a MediaError of code `aborted`. */
  signal?: AbortSignal;
  /** Words that start the reason of a failure, e.g. 'video could not be rendered'. */
  what?: string;
}

/** Most stderr bytes kept for an error reason. */
const STDERR_TAIL_BYTES = 8 * 1024;

/**
 * Runs ffmpeg with `args` (after `-hide_banner -nostdin -loglevel error -y`). Resolves when it exits
 * with code 0; rejects with a MediaError carrying a plain reason otherwise.
 *
 * @param args ffmpeg arguments, inputs and output included
 * @example await runFfmpeg(['-f', 'lavfi', '-i', 'testsrc2=d=1', 'out.mp4'], { signal });
 */
export function runFfmpeg(args: readonly string[], opts: RunFfmpegOptions = {}): Promise<void> {
  const what = opts.what ?? 'ffmpeg failed';
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(new MediaError('aborted', `${what}: aborted`));
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      windowsHide: true,
    });
    let tail = '';
    let settled = false;
    const finish = (err: MediaError | null) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    const onAbort = () => {
      child.kill('SIGKILL');
      finish(new MediaError('aborted', `${what}: aborted`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-STDERR_TAIL_BYTES);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      finish(
        new MediaError(
          'tool',
          err.code === 'ENOENT' ? 'ffmpeg could not be started' : `${what}: ${err.message}`,
        ),
      );
    });
    child.on('close', (code, sig) => {
      if (code === 0) return finish(null);
      const why = tail.trim()
        ? plainWhy(tail)
        : sig
          ? `ffmpeg was killed (${sig})`
          : `ffmpeg exited with code ${code}`;
      finish(new MediaError('tool', `${what}: ${why}`));
    });
  });
}
