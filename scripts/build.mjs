#!/usr/bin/env node
/**
 * Bundles the CLI from src/ into dist/ with esbuild (about a second), so that `genpipe` starts
 * without compiling TypeScript on every run: that saves ~0.3 s and ~35 MB per process. Runs on
 * `npm ci` (the `prepare` script) and by `npm run build`. bin/genpipe.js falls back to the sources
 * (through tsx) whenever src/ is newer than the build, so an edit is never run stale.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { newestSourceMtime } from './source-mtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');
const tmp = join(root, `dist.tmp-${process.pid}`);
const srcMtime = newestSourceMtime(join(root, 'src'));

rmSync(tmp, { recursive: true, force: true });
await build({
  entryPoints: [join(root, 'src', 'cli', 'main.ts')],
  outdir: tmp,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  chunkNames: 'chunks/[name]-[hash]',
});
writeFileSync(
  join(tmp, 'build.json'),
  `${JSON.stringify({ srcMtime, builtAt: new Date().toISOString() })}\n`,
);
mkdirSync(out, { recursive: true });
rmSync(out, { recursive: true, force: true });
renameSync(tmp, out);
