/** A new file record in the store, in state pending, with its expiry armed. */
import { randomUUID } from 'node:crypto';
import type { FileFields } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import type { FileRec } from '../store.ts';
import { scheduleExpiry } from './file-access.ts';

/** A fresh file id (uuid). */
export function newFileId(): string {
  return randomUUID();
}

/**
 * Stores a pending file record for `clientId`.
 * @param init.mime_type the MIME type shown until ingest learns the real one
 * @param init.blobPath where the bytes already are (inline), or null (presigned: not yet uploaded)
 */
export function addFileRecord(
  ctx: EmulatorContext,
  init: {
    id: string;
    clientId: string;
    fields: FileFields;
    mime_type: string;
    size_bytes: number;
    mode: FileRec['mode'];
    blobPath: string | null;
  },
): FileRec {
  const rec: FileRec = {
    id: init.id,
    clientId: init.clientId,
    seq: ctx.store.nextSeq(),
    createdAt: ctx.clock.now(),
    mime_type: init.mime_type,
    purpose: init.fields.purpose,
    size_bytes: init.size_bytes,
    state: 'pending',
    deletedAt: null,
    expiresAt: init.fields.expiresAt,
    failure_reason: null,
    filename: init.fields.filename,
    user_id: init.fields.user_id,
    mode: init.mode,
    blobPath: init.blobPath,
    ingestStarted: false,
    media: null,
  };
  ctx.store.files.set(rec.id, rec);
  scheduleExpiry(ctx, rec);
  return rec;
}
