/**
 * Code run as another user (`nobody`, when the tests run as root) cannot be run from the checkout
 * itself: the checkout may sit in a folder only its owner can enter (a clone under /root, or in a
 * `mktemp -d` folder). Such a child runs from a copy of what it needs instead, in a temp folder of its
 * own that every user can enter: the sources (src/, bin/, scripts/, test/helpers/), samples/ (demo's),
 * package.json and tsconfig.json copied, and node_modules linked to the checkout's when every folder
 * above it can be entered by others, else hard-linked file by file (copied where hard links cannot go).
 *
 * @example
 * const root = otherUserCheckout(); // made once per test file, removed after its tests
 * spawn(process.execPath, [join(root, 'bin', 'genpipe.js'), 'status', out], { uid: 65534, gid: 65534 });
 */
import {
  chmodSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse, resolve } from 'node:path';
import { afterAll } from 'vitest';
import { linkTree } from '../../src/pipeline/store/postgres/embedded-binaries.ts';

export { linkTree };

/** The checkout the tests run from. */
export const CHECKOUT = resolve(import.meta.dirname, '..', '..');

/** The user and group a test runs a child as to be someone else: nobody as root, else no change. */
export const UNPRIVILEGED: { uid: number; gid: number } | null =
  process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;

/** What a child needs of the checkout, besides node_modules. */
const NEEDED = ['package.json', 'tsconfig.json', 'bin', 'scripts', 'src', 'samples', join('test', 'helpers')];

/** Whether every folder from / down to `path` (itself included) can be entered by any user. */
export function enterableByOthers(path: string): boolean {
  let dir = realpathSync(path);
  for (;;) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    const up = dirname(dir);
    if (up === dir || dir === parse(dir).root) return true;
    dir = up;
  }
}

/** Makes every file and folder under `dir` readable (and folders enterable) by all. */
function openToAll(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) {
      chmodSync(path, 0o755);
      openToAll(path);
    } else chmodSync(path, statSync(path).mode | 0o444);
  }
}

let made: string | null = null;

// Removed after the test file that made it (a vitest worker may end without its 'exit' handlers).
afterAll(() => {
  if (made) rmSync(made, { recursive: true, force: true });
  made = null;
});

/**
 * The root of a copy of the checkout that any user can run code from (made on the first call, removed
 * after the test file's tests). Its bin/genpipe.js runs the sources through tsx.
 */
export function otherUserCheckout(): string {
  if (made) return made;
  const root = mkdtempSync(join(tmpdir(), 'genpipe-other-user-'));
  for (const part of NEEDED) {
    cpSync(join(CHECKOUT, part), join(root, part), { recursive: true, preserveTimestamps: true });
  }
  openToAll(root);
  chmodSync(root, 0o755);
  const modules = realpathSync(join(CHECKOUT, 'node_modules'));
  if (enterableByOthers(modules)) symlinkSync(modules, join(root, 'node_modules'));
  else linkTree(modules, join(root, 'node_modules'));
  made = root;
  return root;
}
