/**
 * A recipe found in the input folder (its genpipe.yaml) may only reference files inside the input
 * folder: a recipe dropped into a shared inbox must not reach other files, nor tell by its refusal
 * which ones exist. A recipe given with --recipe may reference any file.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { writePng } from '../client/client-helpers.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let root: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-recipe-confined-'));
  emu = await startTestEmulator();
  env = cliEnv(emu);
  await mkdir(join(root, 'brand'));
  await writePng(join(root, 'brand', 'logo.png'), 40, 30);
  await writeFile(join(root, 'brand', 'notes.txt'), 'not an image');
});

afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

function recipe(refs: Record<string, string>): string {
  const lines = Object.entries(refs).map(([name, path]) => `  ${name}: "${path}"`);
  return `references:
${lines.join('\n')}
rules:
  - match: "**/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;
}

const OUTSIDE = 'a recipe in the input folder may only reference files inside the input folder';

describe('references of a recipe found in the input folder', () => {
  it('refuses every file outside the input folder with one text, whether it exists or not', async () => {
    const input = join(root, 'inbox');
    await put(input, 'a.txt', 'a red fox');
    await symlink(join(root, 'brand', 'logo.png'), join(input, 'linked.png'));
    await symlink(join(root, 'brand'), join(input, 'linkdir'));
    await symlink(join(root, 'nowhere'), join(input, 'dangling.png'));
    await put(
      input,
      'genpipe.yaml',
      recipe({
        logo: '../brand/logo.png',
        notes: '../brand/notes.txt',
        missing: '../brand/missing.png',
        passwd: '/etc/passwd',
        nothing: '/etc/no-such-file',
        linked: 'linked.png',
        throughdir: 'linkdir/missing.png',
        dangling: 'dangling.png',
      }),
    );
    const r = await runCli(['run', input, '--out', join(root, 'inbox-out'), '--dry-run'], env);
    expect(r.code, r.stderr).toBe(2);
    for (const path of [
      '../brand/logo.png',
      '../brand/notes.txt',
      '../brand/missing.png',
      '/etc/passwd',
      '/etc/no-such-file',
      'linked.png',
      'linkdir/missing.png',
      'dangling.png',
    ]) {
      expect(r.stderr).toContain(`${path}: ${OUTSIDE}`);
    }
    expect(r.stderr).not.toContain('file not found');
    expect(r.stderr).not.toContain('must be an image or a video');
  });

  it('takes a reference inside the input folder', async () => {
    const input = join(root, 'inside');
    await put(input, 'a.txt', 'a red fox');
    await mkdir(join(input, 'refs'), { recursive: true });
    await writePng(join(input, 'refs', 'style.png'), 40, 30);
    await put(input, 'genpipe.yaml', recipe({ style: 'refs/style.png' }));
    const r = await runCli(['run', input, '--out', join(root, 'inside-out'), '--dry-run'], env);
    expect(r.code, r.stderr).toBe(0);
  });

  it('a recipe given with --recipe references files anywhere, and says which one is missing', async () => {
    const input = join(root, 'given');
    await put(input, 'a.txt', 'a red fox');
    const file = join(root, 'given.yaml');
    await writeFile(file, recipe({ logo: join(root, 'brand', 'logo.png') }));
    const ok = await runCli(
      ['run', input, '--out', join(root, 'given-out'), '--recipe', file, '--dry-run'],
      env,
    );
    expect(ok.code, ok.stderr).toBe(0);
    await writeFile(file, recipe({ logo: join(root, 'brand', 'missing.png') }));
    const missing = await runCli(
      ['run', input, '--out', join(root, 'given-out'), '--recipe', file, '--dry-run'],
      env,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('file not found');
  });
});
