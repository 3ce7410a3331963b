/** What the tests of recipes on the legacy surface share: an input folder with its recipe, a clip, a rule. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegPath } from '../../src/media/ffmpeg-path.ts';

/**
 * A new folder with `in/genpipe.yaml` holding `recipe` and the given inputs; its path is pushed on
 * `dirs` (removed by the test file's afterAll).
 */
export function recipeFolder(
  dirs: string[],
  recipe: string,
  inputs: Record<string, string | Buffer>,
): { input: string; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-legacy-recipe-'));
  dirs.push(dir);
  const input = join(dir, 'in');
  mkdirSync(input);
  writeFileSync(join(input, 'genpipe.yaml'), recipe);
  for (const [name, body] of Object.entries(inputs)) writeFileSync(join(input, name), body);
  return { input, out: join(dir, 'out') };
}

/** A 2 s 320x240 video, made with ffmpeg. */
export function clip(path: string): void {
  execFileSync(ffmpegPath(), [
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=320x240:rate=24:duration=2',
    '-pix_fmt',
    'yuv420p',
    '-y',
    path,
  ]);
}

/** A rule making one photon-1 16:9 image of each prompt file. */
export const PHOTON = [
  'rules:',
  '  - match: "*.txt"',
  '    input_as: prompt',
  '    request: { surface: legacy, operation: generate-image, model: photon-1, aspect_ratio: "16:9" }',
  '',
].join('\n');
