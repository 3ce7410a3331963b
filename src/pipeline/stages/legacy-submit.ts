/**
 * Upload and submit of a request that targets the legacy surface (legacy-request.ts), the agents
 * surface's stages' counterparts (upload.ts and submit.ts call them for such a request).
 *
 * - upload: the legacy surface has no file store; it takes media by URL. A rule's `media_url` template
 *   gives the file's URL here (recorded in the request: what is sent); under `media_url: emulator` the
 *   URL is made at submit, right before the create (the bytes sent to the emulator's media store).
 * - submit: the create through client.legacy (checked locally with the service's rules first: a
 *   PreflightError sends nothing). The legacy surface cannot be asked by request id either, so the
 *   intent is journaled (the item with its request id, no generation id) before the create is sent, and
 *   the generation id as soon as the create answers; a lost answer fails the item with its request id,
 *   and the next run applies the crash policy to it (store/crash-policy.ts): never a second create on
 *   its own.
 */
import { randomUUID } from 'node:crypto';
import { CreateNotSentError, redactShapes } from '../../client/index.ts';
import { failureOfError } from '../failure-class.ts';
import { assertFileAsChecked } from '../input-changed.ts';
import { type Item, stepOf, withStep } from '../item.ts';
import { EMULATOR_MEDIA_URL, mediaUrlOf } from '../legacy-media-url.ts';
import {
  holdsLegacyInput,
  LEGACY_RECIPE_OPERATIONS,
  legacyOperationOf,
  legacySentMediaUrl,
  legacyWireBody,
  withLegacyMediaUrl,
} from '../legacy-request.ts';
import type { Json } from '../recipe-request.ts';
import type { RunContext } from '../run-context.ts';
import { isRunnersToHandle, reasonOf } from '../runner-errors.ts';
import { advanceStep, failStep } from '../stage.ts';
import { createFailed } from './create-failure.ts';

/** The texts of a legacy submit. */
export const LEGACY_SUBMIT_TEXTS = {
  /** The item's media could not be made a URL (the emulator's media store refused it, …). */
  notSent: (why: string): string => `the input could not be sent: ${why}`,
} as const;

/** The rule's media_url of the item (null: the rule gives none). */
export function mediaUrlRule(item: Item, recipe: Pick<RunContext['recipe'], 'rules'>): string | null {
  return (item.rule ? recipe.rules[item.rule.index]?.mediaUrl : null) ?? null;
}

/** Upload (checked → uploaded) of a legacy request: the file's URL by the rule's template. */
export async function uploadLegacy(item: Item, request: Json, ctx: RunContext): Promise<Item> {
  const template = mediaUrlRule(item, ctx.recipe);
  if (!holdsLegacyInput(request) || template === null || template === EMULATOR_MEDIA_URL) {
    return advanceStep(item, 'uploaded', { request, upload: null });
  }
  // Recorded with its credentials masked (the journal holds no token): submit makes it again to send it.
  return advanceStep(item, 'uploaded', {
    request: withLegacyMediaUrl(request, redactShapes(mediaUrlOf(template, item.input))),
    upload: null,
  });
}

/**
 * The body sent: the file still the version checked, its URL made now from the rule's media_url (a
 * template's, recorded masked at upload; or, under `media_url: emulator`, the emulator's media store's).
 */
async function wireBody(item: Item, request: Json, ctx: RunContext): Promise<Json> {
  if (item.inputAs !== 'prompt') await assertFileAsChecked(item, ctx.signal);
  const template = mediaUrlRule(item, ctx.recipe);
  if (template !== null && template !== EMULATOR_MEDIA_URL && legacySentMediaUrl(request) !== null) {
    return legacyWireBody(withLegacyMediaUrl(request, mediaUrlOf(template, item.input)));
  }
  if (!holdsLegacyInput(request)) return legacyWireBody(request);
  const { url } = await ctx.client.emulatorMedia.put(item.absPath, {
    signal: ctx.signal,
    ...(item.contentHash ? { sha256: item.contentHash } : {}),
  });
  return legacyWireBody(withLegacyMediaUrl(request, url));
}

/** Submit (uploaded → submitted) of a legacy request. */
export async function submitLegacy(item: Item, ctx: RunContext): Promise<Item> {
  const step = stepOf(item);
  const request = step.request as Json;
  const op = legacyOperationOf(request);
  if (op === null) return failStep(item, 'submit', 'no legacy operation', { requestId: null });
  let body: Json;
  try {
    body = await wireBody(item, request, ctx);
  } catch (err) {
    if (isRunnersToHandle(err, ctx.signal)) throw err;
    return failStep(
      item,
      'submit',
      LEGACY_SUBMIT_TEXTS.notSent(reasonOf(err)),
      { requestId: null },
      { failure: failureOfError(err) },
    );
  }
  const requestId = randomUUID();
  if (ctx.stopping.aborted) {
    throw new CreateNotSentError(`legacy ${op}`, requestId, ctx.stopping.reason);
  }
  const pending = withStep(item, { requestId, generationId: null, attempts: step.attempts + 1 });
  // Intent before action: the request id is journaled before the create is written.
  await ctx.persist(pending);
  try {
    const generation = await ctx.client.legacy.create(LEGACY_RECIPE_OPERATIONS[op].create, body, {
      requestId,
      signal: ctx.signal,
    });
    return advanceStep(pending, 'submitted', { generationId: generation.id });
  } catch (err) {
    return createFailed(pending, requestId, err, ctx.signal);
  }
}
