/**
 * How an item's own media travels, in words: shared by the upload step's progress (stage-list.ts) and
 * the journal's reason for an item resumed before its create (store/resume-decision.ts), so that
 * neither says "uploaded" of an item nothing was uploaded for. Both import this module, neither
 * imports the other.
 */
import { currentStep, type Item } from './item.ts';
import { isLegacyRequest } from './legacy-request.ts';

/**
 * What became of the item's own media at its upload step: `uploaded` (as a file, with a file_id),
 * `inline (base64)` (the image goes in the request itself, read at submit), `prompt ready` (a prompt
 * file: its text is in the request since plan), `by URL` (a legacy request: the service fetches the
 * file at its media_url), or `ready` (a request without media of the item's own).
 *
 * @example uploadOutcome(promptItem) // 'prompt ready'
 */
export function uploadOutcome(
  item: Item,
): 'uploaded' | 'inline (base64)' | 'prompt ready' | 'by URL' | 'ready' {
  const step = currentStep(item);
  const upload = step?.upload;
  if (upload?.mode === 'base64') return 'inline (base64)';
  if (upload) return 'uploaded';
  if (item.inputAs === 'prompt') return 'prompt ready';
  return step && isLegacyRequest(step.request) ? 'by URL' : 'ready';
}

/**
 * The progress words of an item the upload step advanced, when `uploaded` would not be true; null when
 * its own media was uploaded as a file (the state's name says it).
 *
 * @example uploadedWords(base64Item) // 'inline (base64): the image goes in the request'
 */
export function uploadedWords(item: Item): string | null {
  switch (uploadOutcome(item)) {
    case 'uploaded':
      return null;
    case 'inline (base64)':
      return 'inline (base64): the image goes in the request';
    case 'prompt ready':
      return 'prompt ready: the text goes in the request';
    case 'by URL':
      return "by URL: the service fetches the file at the rule's media_url";
    case 'ready':
      return 'ready: nothing of its own to upload';
  }
}
