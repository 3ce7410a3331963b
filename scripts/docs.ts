/**
 * `npm run docs` (also `npm run docs:flags`): writes, from the commands' definitions in src/cli,
 * README.md's flag tables (scripts/readme-flags.ts) and a page per command in docs/commands
 * (scripts/command-pages.ts), removing the pages of commands that are gone. Run it after changing a
 * command, its options, their descriptions, its examples or its exit codes;
 * test/scripts/readme-flags.test.ts fails until README.md and docs/commands are what this writes.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildProgram } from '../src/cli/program.ts';
import { PAGES_DIR, pageFilesIn, renderCommandPages } from './command-pages.ts';
import { renderFlagTables } from './readme-flags.ts';

const root = join(import.meta.dirname, '..');
const readmePath = join(root, 'README.md');
const program = await buildProgram(['node', 'genpipe']);
const before = await readFile(readmePath, 'utf8');
const after = await renderFlagTables(before, program);
if (after === before) {
  console.log('README.md: the flag tables are up to date');
} else {
  await writeFile(readmePath, after);
  console.log('README.md: flag tables rewritten from the commands in src/cli');
}

const dir = join(root, PAGES_DIR);
await mkdir(dir, { recursive: true });
const pages = await renderCommandPages(after, program);
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
