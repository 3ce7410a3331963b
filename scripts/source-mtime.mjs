/** The newest modification time (ms) of any file under a directory: how the build tells it is stale. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function newestSourceMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMtime(path));
    else if (entry.isFile()) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return Math.max(newest, statSync(dir).mtimeMs);
}
