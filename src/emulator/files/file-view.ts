/** The File JSON of a stored record, exactly as the interface's File table. */
import type { ApiFile } from '../../spec/index.ts';
import type { FileRec } from '../store.ts';

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * The wire shape of a file record: ISO date-times, null for every optional field that is not set.
 * Apply expiry first (see applyExpiry) so an expired file reads as deleted.
 */
export function fileView(rec: FileRec): ApiFile {
  return {
    id: rec.id,
    created_at: new Date(rec.createdAt).toISOString(),
    mime_type: rec.mime_type,
    purpose: rec.purpose,
    size_bytes: rec.size_bytes,
    state: rec.state,
    deleted_at: iso(rec.deletedAt),
    expires_at: iso(rec.expiresAt),
    failure_reason: rec.failure_reason,
    filename: rec.filename,
    user_id: rec.user_id,
  };
}
