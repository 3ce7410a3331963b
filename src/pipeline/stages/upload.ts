/**
 * Stage upload (checked → uploaded): puts real media where plan left placeholders.
 *
 * - Shared recipe references (`$ref:<name>`) get the file_id of the batch's one upload of each.
 * - The item's own media (`$input`) goes the cheapest correct way for its rule's `upload` key:
 *   `auto` (default) lets the client send it inline (multipart) up to its threshold and presigned
 *   above; `inline` / `presigned` force one; `base64` puts a small image (≤ base64MaxBytes) into the
 *   request itself as `{ data, media_type }` — no file upload, no readiness wait; the bytes are read at
 *   submit time, so until then the request holds `data: '$input'`. Larger files and videos fall back
 *   to `auto`.
 * - What was uploaded must be what was checked: the sha256 the client computed while streaming the
 *   file is compared with the item's content hash before anything else (input-changed.ts). Other bytes
 *   (the file changed since its check, or while it streamed) reject with InputChangedError for the
 *   runner, which processes the file again from the start; the upload is deleted at the service (one
 *   call, its failure ignored: an upload no create uses costs nothing and expires). A presigned upload
 *   cut short because the file's size changed is left `pending` at the service, never completed.
 * - An uploaded file is waited on until `ready`; a file the service marks `failed` fails the item with
 *   the service's failure_reason.
 * - A failed item's `failure` says whether a later run may retry it (failure-class.ts).
 *
 * A prompt file has no media of its own: it only gets its references.
 */
import { basename } from 'node:path';
import { FileFailedError, SizeMismatchError, type UploadMode } from '../../client/index.ts';
import type { ImageRef } from '../../spec/index.ts';
import { fillStepOutputs } from '../chain.ts';
import { failureOfError } from '../failure-class.ts';
import { assertCheckedBytes, InputChangedError } from '../input-changed.ts';
import { type Item, stepOf } from '../item.ts';
import { isLegacyRequest } from '../legacy-request.ts';
import type { Recipe } from '../recipe.ts';
import { INPUT_FILE_ID, type Json, REF_FILE_ID_PREFIX } from '../recipe-request.ts';
import { fillReferences, ReferenceUploadError, referenceNamesIn } from '../references.ts';
import type { RunContext } from '../run-context.ts';
import { isRunnersToHandle, reasonOf } from '../runner-errors.ts';
import { advanceStep, expectState, failStep } from '../stage.ts';
import { uploadLegacy } from './legacy-submit.ts';

/** The `data` of a request whose input image travels inline: filled with the base64 bytes at submit. */
export const INLINE_INPUT_DATA = '$input';

/** Largest image sent as base64 `data` under `upload: base64` (larger ones are uploaded as files). */
export const BASE64_MAX_BYTES = 4 * 1024 * 1024;

/** True when the request still holds the item's own media placeholder. */
export function holdsInput(request: Json): boolean {
  let found = false;
  fillReferences(request, (id) => {
    if (id === INPUT_FILE_ID) found = true;
    return undefined;
  });
  return found;
}

/**
 * How the item's own media travels, by its rule's `upload` key: `base64` (in the request itself) for an
 * image of at most `base64MaxBytes` under `upload: base64`; otherwise the client's upload mode —
 * `inline` or `presigned` when the rule forces one, else `auto` (larger files and videos under
 * `base64` too). What the upload stage does, and what a dry run shows.
 *
 * @example ownMediaMode(photoItem, recipe, BASE64_MAX_BYTES) // 'base64' under `upload: base64`
 */
export function ownMediaMode(
  item: Item,
  recipe: Pick<Recipe, 'rules'>,
  base64MaxBytes: number,
): UploadMode | 'base64' {
  const rule = item.rule ? recipe.rules[item.rule.index] : undefined;
  const preference = rule?.upload ?? 'auto';
  if (
    preference === 'base64' &&
    item.sniff?.kind === 'image' &&
    (item.media?.bytes ?? item.size) <= base64MaxBytes
  ) {
    return 'base64';
  }
  return preference === 'inline' || preference === 'presigned' ? preference : 'auto';
}

/**
 * Resolves when `asChecked` does (the upload `fileId` may be created from); when it rejects with
 * InputChangedError — the upload or the file is not what was checked — the upload is deleted at the
 * service first (one call, its failure ignored). Used after an upload and right before a create.
 *
 * @example await deletedIfChanged(fileId, ctx, () => assertCheckedBytes(item, sha256, `upload ${fileId}`));
 */
export async function deletedIfChanged(
  fileId: string,
  ctx: RunContext,
  asChecked: () => void | Promise<void>,
): Promise<void> {
  try {
    await asChecked();
  } catch (err) {
    if (err instanceof InputChangedError) {
      await ctx.client.files.delete(fileId, { signal: ctx.signal }).catch(() => undefined);
    }
    throw err;
  }
}

/**
 * Uploads what the item's request needs and advances it to `uploaded` with `request` (placeholders
 * replaced) and `upload` set. Fails it when a shared reference or the file itself is refused.
 *
 * @example const next = await upload(checkedItem, ctx); // next.request.source → { file_id: '…' }
 */
export async function upload(item: Item, ctx: RunContext): Promise<Item> {
  expectState(item, 'upload', 'checked');
  ctx.signal.throwIfAborted();
  let request = stepOf(item).request as Json;
  if (isLegacyRequest(request)) return uploadLegacy(item, request, ctx);

  const refIds = new Map<string, string>();
  try {
    for (const name of referenceNamesIn(request)) refIds.set(name, await ctx.references.fileId(name));
  } catch (err) {
    if (err instanceof ReferenceUploadError) {
      // The journal failed, not the upload: the batch stops and the file is left for the next run.
      if (err.journalError !== null) throw ctx.journalFailed(err.journalError);
      return failStep(item, 'upload', err.message, {}, { failure: err.failure });
    }
    throw err;
  }
  request = fillReferences(request, (id) => {
    const fileId = id.startsWith(REF_FILE_ID_PREFIX) ? refIds.get(id.slice(REF_FILE_ID_PREFIX.length)) : null;
    return fileId ? { file_id: fileId } : undefined;
  });
  // A chain step chained by id takes its parents' generation ids (their outputs travelling by url are
  // filled in by submit, fresh).
  request = fillStepOutputs(
    request,
    'generation_id',
    (name) => item.steps.find((s) => s.name === name)?.generationId ?? undefined,
  );

  if (!holdsInput(request)) return advanceStep(item, 'uploaded', { request, upload: null });

  const sniffed = item.sniff;
  const mode = ownMediaMode(item, ctx.recipe, ctx.settings.base64MaxBytes);
  if (mode === 'base64' && sniffed) {
    const inline: ImageRef = { data: INLINE_INPUT_DATA, media_type: sniffed.mime };
    return advanceStep(item, 'uploaded', {
      request: fillReferences(request, (id) => (id === INPUT_FILE_ID ? inline : undefined)),
      upload: { mode: 'base64', fileId: null, sha256: null },
    });
  }

  try {
    const result = await ctx.client.files.upload(item.absPath, {
      mode: mode === 'base64' ? 'auto' : mode,
      purpose: 'input',
      filename: basename(item.input),
      ...(sniffed ? { mimeType: sniffed.mime } : {}),
      signal: ctx.signal,
    });
    const fileId = result.file.id;
    await deletedIfChanged(fileId, ctx, () => assertCheckedBytes(item, result.sha256, `upload ${fileId}`));
    await ctx.client.files.waitUntilReady(fileId, {
      signal: ctx.signal,
      pollIntervalMs: ctx.settings.filePollIntervalMs,
    });
    return advanceStep(item, 'uploaded', {
      request: fillReferences(request, (id) => (id === INPUT_FILE_ID ? { file_id: fileId } : undefined)),
      upload: { mode: result.mode, fileId, sha256: result.sha256 },
    });
  } catch (err) {
    // A file whose size changed while it streamed is not what was checked either.
    if (err instanceof SizeMismatchError) throw new InputChangedError(item.input, err.message);
    if (isRunnersToHandle(err, ctx.signal)) throw err;
    const failure = failureOfError(err);
    if (err instanceof FileFailedError) {
      const reason = err.failureReason ?? `the service marked file ${err.fileId} failed`;
      return failStep(item, 'upload', reason, {}, { failure });
    }
    return failStep(item, 'upload', reasonOf(err), {}, { failure });
  }
}
