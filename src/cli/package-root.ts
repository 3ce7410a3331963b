/** The genpipe package's own folder, found from this module whether it runs from src/ or from dist/. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function isGenpipeRoot(dir: string): boolean {
  const pkg = join(dir, 'package.json');
  if (!existsSync(pkg)) return false;
  try {
    return (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'genpipe';
  } catch {
    return false;
  }
}

/** Walks up from this module to the folder holding genpipe's package.json. */
export function packageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (isGenpipeRoot(dir)) return dir;
    if (dirname(dir) === dir) throw new Error(`genpipe's package.json not found above ${from}`);
  }
}

/** genpipe's version, from its package.json. */
export function genpipeVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string })
    .version;
}
