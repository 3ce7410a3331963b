/** `--json` progress: each PipelineEvent as one JSON object on its own line, secrets masked. */
import { isoTime } from '../../spec/iso-time.ts';
import type { PipelineEvent } from '../events.ts';
import { type Redact, redactDeep, redactShapes } from './redact.ts';
import type { ProgressDisplay, ProgressStream } from './types.ts';

/** An event as its `--json` line has it: the event itself, `at` an ISO 8601 UTC time (docs/schemas/event.schema.json). */
export type EventJson = Omit<PipelineEvent, 'at'> & { at: string };

/**
 * The JSON form of an event: the event with its time (`at`, ms since the epoch in the process) written
 * as every JSON document of genpipe writes a time.
 *
 * @example eventJson({ type: 'item_discovered', at: 0, input: 'a.png', size: 1 }).at // '1970-01-01T00:00:00.000Z'
 */
export function eventJson(event: PipelineEvent): EventJson {
  return { ...event, at: isoTime(event.at) } as EventJson;
}

/**
 * A display writing every event as one line of JSON (eventJson, with any secret replaced by
 * `[redacted]`).
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
      stream.write(`${JSON.stringify(redactDeep(eventJson(event), redact))}\n`);
    },
    close: () => {
      closed = true;
    },
  };
}
