/**
 * `npm run docs:flags`: rewrites README.md's flag tables from the commands' definitions in src/cli
 * (scripts/readme-flags.ts). Run it after changing a command's options or their descriptions;
 * test/scripts/readme-flags.test.ts fails until README.md is what this writes.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderFlagTables } from './readme-flags.ts';

const readmePath = join(import.meta.dirname, '..', 'README.md');
const before = await readFile(readmePath, 'utf8');
const after = await renderFlagTables(before);
if (after === before) {
  console.log('README.md: the flag tables are up to date');
} else {
  await writeFile(readmePath, after);
  console.log('README.md: flag tables rewritten from the commands in src/cli');
}
