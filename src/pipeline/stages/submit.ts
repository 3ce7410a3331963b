/**
 * Stage submit (uploaded → submitted): creates the generation through the client, whose pacer keeps
 * creates inside the request-rate window and whose governor holds them while the service's job
 * ceiling is reached (the runner caps the jobs in flight at --concurrency).
 *
 * The body is made first: an image sent as base64 is read here, and its bytes must hash to the item's
 * content hash — what was checked and journaled — or nothing is sent (InputChangedError, for the runner:
 * the file is processed again from the start; see input-changed.ts). Any other create is sent only while
 * the file is still the version checked: one that changed after its upload (while it waited for a job
 * slot), or a prompt file whose text the request holds since plan, is not sent, and its upload is
 * deleted at the service.
 *
 * The X-Request-Id is made here and journaled on the item (ctx.persist) when the create is about to go
 * on the wire — the client's beforeSend, after its governor, pacer and retry waits, which the create
 * waits for before it writes a byte — so the journal knows a create may have reached the service, and
 * only then: a create still held by the client when the process dies was never sent, and the next run
 * submits the file like any other. An attempt the service certainly did not act on (429, 502, 503, a
 * connection that failed before the request was written) withdraws the intent (nothingQueued) before
 * the client waits to retry it; the retry, with the same request id, records it again. A lost answer
 * fails the item with that id and is never resent on its own: the job may exist (the service cannot be
 * asked by request id), and a second create would be paid twice; the next run applies the crash policy
 * to it (store/crash-policy.ts).
 * A request the service would refuse (the client's preflight with src/spec) fails the item with the
 * service's exact detail, and nothing is sent.
 *
 * Once the batch stops taking new work (ctx.stopping), a create still held by the client's pacer or
 * governor, or waiting between retries, is not sent: the client throws CreateNotSentError, which the
 * runner takes as a stop, and SUBMIT_POLICY records the item without that request id (never used).
 * A create already on the wire goes on to its answer, cut only by ctx.signal (it may then be sent).
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type GenerationRequest, SharedQuotaError } from '../../client/index.ts';
import { fillStepOutputs, stepOutputsIn } from '../chain.ts';
import { failureOfError } from '../failure-class.ts';
import { assertCheckedBytes, assertFileAsChecked, sha256Of } from '../input-changed.ts';
import { type Item, stepOf, withStep } from '../item.ts';
import { isLegacyRequest } from '../legacy-request.ts';
import type { Json } from '../recipe-request.ts';
import type { RunContext } from '../run-context.ts';
import { isRunnersToHandle, reasonOf } from '../runner-errors.ts';
import { advanceStep, expectState, failStep } from '../stage.ts';
import { createFailed } from './create-failure.ts';
import { submitLegacy } from './legacy-submit.ts';
import { deletedIfChanged, INLINE_INPUT_DATA } from './upload.ts';

/**
 * The create's retry budget for a 429: a rate limit is waited out (each time its Retry-After) rather
 * than failing the item, up to 20 sends of the same request (a 429 queued nothing, so the same
 * request id may be sent again); other errors keep the client's budget.
 */
export const SUBMIT_RETRY = { maxRateLimitRetries: 19 } as const;

export { lostAnswerReason } from '../outcome-texts.ts';

/**
 * The request body as sent: the planned request with an inline input image's bytes read from disk as
 * base64 (only images of at most the base64 limit travel this way), once they are found to be the bytes
 * the item was checked with — as must be the bytes of its upload, by the sha256 the client computed
 * (the upload stage compared it already; an upload an earlier run journaled is compared here), and the
 * file itself, still the version checked (assertFileAsChecked). An upload of a file found changed is
 * deleted at the service.
 *
 * @throws InputChangedError when they are not
 */
async function wireRequest(item: Item, request: Json, ctx: RunContext): Promise<GenerationRequest> {
  const step = stepOf(item);
  if (step.upload?.mode !== 'base64') {
    const { fileId, sha256 } = step.upload ?? {};
    const asChecked = async () => {
      if (fileId && sha256) assertCheckedBytes(item, sha256, `upload ${fileId}`);
      await assertFileAsChecked(item, ctx.signal);
    };
    await (fileId ? deletedIfChanged(fileId, ctx, asChecked) : asChecked());
    return request as GenerationRequest;
  }
  const bytes = await readFile(item.absPath);
  assertCheckedBytes(item, sha256Of(bytes), 'the bytes read for the create');
  const data = bytes.toString('base64');
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) out[k] = k === 'data' && x === INLINE_INPUT_DATA ? data : walk(x);
    return out;
  };
  return walk(request) as GenerationRequest;
}

/**
 * The request with each parent output that travels by url (a chain step's `{ url: '$step:<name>' }`)
 * given the parent generation's first output URL, read fresh now (presigned URLs last an hour; the
 * create follows at once).
 */
async function withParentUrls(item: Item, request: Json, ctx: RunContext): Promise<Json> {
  const urls = new Map<string, string>();
  for (const name of stepOutputsIn(request, 'url')) {
    const id = item.steps.find((s) => s.name === name)?.generationId;
    if (!id) throw new Error(`step '${name}' has no generation to take the output of`);
    const url = (await ctx.client.generations.get(id, { signal: ctx.signal })).output[0]?.url;
    if (!url) throw new Error(`step '${name}' (generation ${id}) has no output`);
    urls.set(name, url);
  }
  return urls.size === 0 ? request : fillStepOutputs(request, 'url', (name) => urls.get(name));
}

/**
 * Sends the item's create and advances it to `submitted` with `generationId`, `requestId` and
 * `attempts` set. Fails it on a preflight rejection (nothing sent), a 4xx answer (the service's
 * detail), a lost answer (see lostAnswerReason) or 429s that outlast every retry, with `failure` saying
 * whether a later run may retry it (a lost answer is the crash policy's: store/crash-policy.ts). Rethrows aborts and
 * batch-stopping errors (401, 402, 403 client state, unreachable) for the runner.
 *
 * @example const next = await submit(uploadedItem, ctx); // next.generationId → '…'
 */
export async function submit(item: Item, ctx: RunContext): Promise<Item> {
  expectState(item, 'submit', 'uploaded');
  ctx.signal.throwIfAborted();
  if (isLegacyRequest(stepOf(item).request)) return submitLegacy(item, ctx);
  let request: Json;
  try {
    request = await withParentUrls(item, stepOf(item).request as Json, ctx);
  } catch (err) {
    if (isRunnersToHandle(err, ctx.signal)) throw err;
    return failStep(
      item,
      'submit',
      `the parent step's output could not be read: ${reasonOf(err)}`,
      { requestId: null },
      { failure: failureOfError(err) },
    );
  }
  let body: GenerationRequest;
  try {
    body = await wireRequest(item, request, ctx);
  } catch (err) {
    if (isRunnersToHandle(err, ctx.signal)) throw err;
    return failStep(
      item,
      'submit',
      `the input could not be read again: ${reasonOf(err)}`,
      { requestId: null },
      { failure: { kind: 'input unreadable', retryable: false } },
    );
  }
  const requestId = randomUUID();
  const pending = withStep(item, { requestId, generationId: null, attempts: stepOf(item).attempts + 1 });
  try {
    const generation = await ctx.client.generations.create(body, {
      requestId,
      signal: ctx.signal,
      holdSignal: ctx.stopping,
      retry: SUBMIT_RETRY,
      // Intent before action: journaled before each attempt is written, withdrawn after one that
      // queued nothing (the item as it came: no request id).
      beforeSend: () => ctx.persist(pending),
      // A store sharing the key's quota records it with the create's request slot, in one transaction.
      intent: pending,
      nothingQueued: () => ctx.persist(item),
    });
    return advanceStep(pending, 'submitted', { generationId: generation.id });
  } catch (err) {
    // Nothing was sent, and nothing may be while the store is away: the batch stops, the file is left.
    if (err instanceof SharedQuotaError && !isRunnersToHandle(err, ctx.signal)) throw ctx.journalFailed(err);
    return createFailed(pending, requestId, err, ctx.signal);
  }
}
