#!/usr/bin/env node
// Entry point. Runs the bundled build in dist/ (made by `npm ci` through the `prepare` script) when it
// is at least as new as src/; otherwise — after an edit, or with GENPIPE_FROM_SOURCE=1 — runs the
// TypeScript sources through tsx's loader, so a stale build is never what runs.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestSourceMtime } from '../scripts/source-mtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function buildIsFresh() {
  if (process.env.GENPIPE_FROM_SOURCE) return false;
  try {
    const { srcMtime } = JSON.parse(readFileSync(join(root, 'dist', 'build.json'), 'utf8'));
    return srcMtime >= newestSourceMtime(join(root, 'src'));
  } catch {
    return false;
  }
}

if (buildIsFresh()) {
  await import('../dist/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
