/** `--json` progress: each PipelineEvent as one JSON object on its own line, secrets masked. */
import { type Redact, redactDeep, redactShapes } from './redact.ts';
import type { ProgressDisplay, ProgressStream } from './types.ts';

/**
 * A display writing every event as one line of JSON (the event object itself, with any secret
 * replaced by `[redacted]`).
 *
 * @example const progress = createJsonLinesProgress(process.stdout, { redact });
 */
export function createJsonLinesProgress(
  stream: ProgressStream,
  opts: { redact?: Redact } = {},
): ProgressDisplay {
  const redact = opts.redact ?? redactShapes;
  let closed = false;
  return {
    sink: (event) => {
      if (closed) return;
      stream.write(`${JSON.stringify(redactDeep(event, redact))}\n`);
    },
    close: () => {
      closed = true;
    },
  };
}
