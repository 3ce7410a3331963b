/**
 * `npm run docs` (also `npm run docs:flags`): writes, from the commands' definitions in src/cli, a page
 * per command in docs/commands (scripts/command-pages.ts), removing the pages of commands that are gone.
 * Run it after changing a command, its options, their descriptions, its examples or its exit codes, or
 * a guide heading the pages link to; test/scripts/command-pages.test.ts fails until docs/commands is
 * what this writes.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildProgram } from '../src/cli/program.ts';
import { PAGES_DIR, pageFilesIn, readGuides, renderCommandPages } from './command-pages.ts';

const root = join(import.meta.dirname, '..');
const program = await buildProgram(['node', 'genpipe']);

const dir = join(root, PAGES_DIR);
await mkdir(dir, { recursive: true });
const pages = await renderCommandPages(await readGuides(root), program);
let changed = 0;
for (const file of await pageFilesIn(dir)) {
  if (pages.has(file)) continue;
  await rm(join(dir, file));
  console.log(`${PAGES_DIR}/${file}: removed (no such command)`);
  changed++;
}
for (const [file, text] of pages) {
  const old = await readFile(join(dir, file), 'utf8').catch(() => null);
  if (old === text) continue;
  await writeFile(join(dir, file), text);
  console.log(`${PAGES_DIR}/${file}: ${old === null ? 'written' : 'rewritten'}`);
  changed++;
}
if (changed === 0) console.log(`${PAGES_DIR}: the ${pages.size} pages are up to date`);
