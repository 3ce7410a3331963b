/** GET /v1/files: the caller's files, newest first, keyset-paginated with an opaque cursor. */
import { type ApiFileList, FILE_CHOICES, FILE_DETAILS, type FileListQuery } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import { compareNewestFirst, decodeCursor, encodeCursor } from './cursor.ts';
import { clientFiles } from './file-access.ts';
import { fileView } from './file-view.ts';

/**
 * One page of the caller's files. Without a `state` filter deleted files are left out; with one, only
 * files in that state are listed.
 * @throws HttpError 400 for a cursor that is not one of ours for this client
 */
export function listFiles(ctx: EmulatorContext, clientId: string, query: FileListQuery): ApiFileList {
  const after = query.cursor === null ? null : decodeCursor(ctx, clientId, query.cursor);
  if (query.cursor !== null && after === null) throw new HttpError(400, FILE_DETAILS.cursorInvalid);
  const rows = clientFiles(ctx, clientId)
    .filter((r) => (query.purpose === null ? true : r.purpose === query.purpose))
    .filter((r) =>
      query.state === null
        ? FILE_CHOICES.listIncludesDeletedByDefault || r.state !== 'deleted'
        : r.state === query.state,
    )
    .filter((r) => after === null || compareNewestFirst(after, r) < 0)
    .sort(compareNewestFirst);
  const page = rows.slice(0, query.limit);
  const hasMore = rows.length > query.limit;
  const last = page.at(-1);
  return {
    data: page.map(fileView),
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor(ctx, clientId, last) : null,
  };
}
