/**
 * A throw-away input folder of prompt files with a one-rule recipe (each `.txt` an image prompt), and
 * its out dir beside it; removed after each test of the file that calls usePromptFolders().
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const RECIPE =
  'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';

/** Registers the clean-up; returns the maker: files by name → text (an empty text makes an empty file). */
export function usePromptFolders(): (files: Record<string, string>) => { input: string; out: string } {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return (files) => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-prompts-'));
    dirs.push(dir);
    const input = join(dir, 'in');
    mkdirSync(input);
    writeFileSync(join(input, 'genpipe.yaml'), RECIPE);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(input, name), text);
    return { input, out: join(dir, 'out') };
  };
}
