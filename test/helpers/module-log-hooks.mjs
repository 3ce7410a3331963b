// The resolve hook of module-log.mjs: every resolved URL appended to GENPIPE_TEST_MODULE_LOG.
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const log = process.env.GENPIPE_TEST_MODULE_LOG;
  if (log) appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
