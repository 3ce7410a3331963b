/**
 * The pipeline's local media check (src/pipeline/media-check.ts) for the files a command uploads on its
 * own: `files upload <path>` and the local `--source` / `--image-ref` files of `generate`. A file that
 * fails it is neither uploaded nor used: the command ends with a LocalCheckError naming the file and the
 * rule (exit 1, as a request the service's rules refuse). Imports media-check.ts itself rather than the
 * pipeline's index, so that `files upload` loads no more than the check.
 */
import { checkLocalMedia, type Sniff } from '../pipeline/media-check.ts';
import { checkImageFacts, FILE_FAILURE_REASONS, sameMediaType } from '../spec/index.ts';
import { LocalCheckError } from './local-check-error.ts';

export { LOCAL_CHECK_NOTE, LocalCheckError } from './local-check-error.ts';

/**
 * Checks a file to upload on its own (`files upload`): an image or a video, not empty, that decodes
 * whole, within what any generation accepts of an image (≤ 50 MB, ≤ 8000 px a side: the service takes
 * such a file, and every generation using it fails) and within the largest upload for a video (5 GiB),
 * and of the type `declaredMime` says when one is given (the service fails a file whose bytes disagree).
 * A video's length is the rule of the generation that uses it (checked when the request is made).
 * Bytes whose type their head does not tell are checked as `declaredMime`, and refused without one
 * with a reason that says to pass `--mime-type`: the service needs the type.
 *
 * @returns the file's sniff (the declared type for bytes that do not tell theirs): the type to send
 * @throws LocalCheckError when it would be refused
 */
export async function checkUploadFile(path: string, declaredMime?: string): Promise<Sniff> {
  const verdict = await checkLocalMedia(path, {
    limits: (facts, kind) => (kind === 'image' ? (checkImageFacts(path, facts)?.detail ?? null) : null),
    sitePath: () => path,
    declared: { ...(declaredMime !== undefined ? { mime: declaredMime } : {}), option: '--mime-type' },
  });
  if (!verdict.ok) throw new LocalCheckError(path, verdict.reason);
  const sniff = verdict.sniff as Sniff;
  if (declaredMime !== undefined && !sameMediaType(declaredMime, sniff.mime)) {
    throw new LocalCheckError(path, FILE_FAILURE_REASONS.mimeMismatch(declaredMime, sniff.mime));
  }
  return sniff;
}

/** A local file of a request, placed at its position by `place`. */
export interface LocalUpload {
  path: string;
  /** The flag that named it (`--source`, `--image-ref`). */
  flag: string;
  /** Puts a file id into the request at the file's position. */
  place: (fileId: string) => void;
}

/**
 * Checks the local files of a request against the rules of the positions they take in it, with the
 * service's texts (`source: image is 9000x30px but each side must be <= 8000px. Resize and try again.`,
 * `source: video is 31s long but must be at most 30s for type 'video_reframe'`), before any of them is
 * uploaded. The request must already pass the service's rules; each file's position gets a placeholder
 * id meanwhile, and `restore` afterwards.
 *
 * @param request - the request body, with the uploads' refs in it
 * @param restore - the file id to leave at the uploads' positions
 * @returns each checked file's type as the check told it from its bytes, by path: the type to upload
 *   it with (the client's own look at the first bytes sees less)
 * @throws LocalCheckError naming the flag, the file and the rule
 */
export async function checkRequestFiles(
  request: Record<string, unknown>,
  uploads: readonly LocalUpload[],
  restore: string,
): Promise<Map<string, string>> {
  const mimes = new Map<string, string>();
  if (uploads.length === 0) return mimes;
  const ids = uploads.map((u, i) => {
    const id = `$local:${i}`;
    u.place(id);
    return id;
  });
  // Loaded only for a request with local files (it brings the recipe modules).
  const { validatePlanned } = await import('../pipeline/recipe-request.ts');
  try {
    const placed = validatePlanned(request);
    if (!placed.ok) return mimes; // the service's own check of the request reports this
    for (const [i, u] of uploads.entries()) {
      const id = ids[i] as string;
      const site = placed.sites.find((s) => s.placeholder === id);
      if (!site) continue;
      const verdict = await checkLocalMedia(u.path, {
        wants: {
          kind: site.position === 'video_source' ? 'video' : 'image',
          site: site.path,
          type: placed.request.type,
        },
        limits: (facts) => {
          const r = validatePlanned(request, { [id]: facts });
          return r.ok ? null : r.detail;
        },
        sitePath: () => site.path,
      });
      if (!verdict.ok) throw new LocalCheckError(`${u.flag} ${u.path}`, verdict.reason);
      if (verdict.sniff) mimes.set(u.path, verdict.sniff.mime);
    }
  } finally {
    for (const u of uploads) u.place(restore);
  }
  return mimes;
}
