/**
 * The files resource of the agents surface as data and pure rules: the wire shapes (File,
 * CreateFileResponse, PresignedUpload, FileList), the checks of the presigned JSON body, of the
 * inline (multipart) fields and of the list query, and every fixed text the interface leaves
 * "not shown" for files. No I/O here; the caller passes the current time in.
 */
import { FILE_PURPOSES, FILE_STATES, type FilePurpose, type FileState } from './enums.ts';
import { LIMITS } from './limits.ts';

// ---- wire shapes ------------------------------------------------------------------------------

/** A File as the service returns it (the interface's File table, in its order). */
export interface ApiFile {
  id: string;
  created_at: string;
  mime_type: string;
  purpose: FilePurpose;
  size_bytes: number;
  state: FileState;
  deleted_at: string | null;
  expires_at: string | null;
  failure_reason: string | null;
  filename: string | null;
  user_id: string | null;
}

/** Where and how to PUT the bytes of a presigned upload. */
export interface PresignedUpload {
  expires_at: string;
  method: 'PUT';
  url: string;
  headers: Record<string, string>;
}

/** Response of POST /v1/files, both modes. */
export interface CreateFileResponse {
  id: string;
  file: ApiFile;
  state: FileState;
  upload: PresignedUpload | null;
}

/** Response of GET /v1/files. */
export interface ApiFileList {
  data: ApiFile[];
  has_more: boolean;
  next_cursor: string | null;
}

// ---- choices --------------------------------------------------------------------------------

/** Decisions about files that the interface leaves "not shown" (listed in docs/interface-choices.md). */
export const FILE_CHOICES = {
  /** purpose of a file created without one. */
  defaultPurpose: 'input' as FilePurpose,
  /** Longest filename and user_id accepted, in characters. */
  textFieldMaxChars: 255,
  /** GET /v1/files without a `state` filter leaves deleted files out; `state=deleted` lists them. */
  listIncludesDeletedByDefault: false,
  /** DELETE of an already deleted (or expired) file answers 204 again: DELETE is idempotent. */
  deleteTwiceStatus: 204,
  /**
   * A declared mime_type (JSON field, or the multipart `mime_type` field) that disagrees with the real
   * bytes fails ingest; without a declared one (multipart), mime_type becomes the sniffed type. The
   * Content-Type of the multipart `file` part is only a hint and is replaced by the sniffed type.
   */
  declaredMimeMismatch: 'failed' as const,
  /** PUT to an upload URL without Content-Length (chunked). */
  uploadLengthRequiredStatus: 411,
  /** PUT whose Content-Length differs from the signed size, or whose Content-Type differs from the declared one. */
  uploadBadRequestStatus: 400,
  /** PUT after the upload was completed, or to a deleted file; complete of a deleted file. */
  conflictStatus: 409,
  /** POST /v1/files with a Content-Type that is neither multipart/form-data nor application/json. */
  unsupportedMediaTypeStatus: 415,
  /**
   * Slack over the inline cap allowed for multipart framing and the other parts before a declared
   * Content-Length alone is enough to answer 413 without reading the body.
   */
  inlineFramingSlackBytes: 1024 * 1024,
  /** Multipart limits besides the file cap. */
  multipartFieldMaxBytes: 16 * 1024,
  multipartMaxFields: 16,
  multipartMaxParts: 24,
} as const;

/** Every fixed `detail` text of the files endpoints and the upload storage route. */
export const FILE_DETAILS = {
  bodyNotObject: 'Request body must be a JSON object',
  mimeTypeRequired: 'mime_type is required',
  mimeTypeInvalid: "mime_type must be a MIME type such as 'image/png'",
  mimeTypeNotMedia: 'mime_type must be an image/* or video/* type',
  sizeRequired: 'size_bytes is required',
  sizeInvalid: `size_bytes must be an integer between 1 and ${LIMITS.presignedMaxBytes}`,
  expiresAtInvalid: 'expires_at must be an RFC 3339 date-time with a time zone, such as 2030-01-01T00:00:00Z',
  expiresAtPast: 'expires_at must be in the future',
  purposeInvalid: `purpose must be one of: ${FILE_PURPOSES.join(', ')}`,
  filenameInvalid: 'filename must be a string',
  filenameTooLong: `filename must be at most ${FILE_CHOICES.textFieldMaxChars} characters`,
  userIdInvalid: 'user_id must be a string',
  userIdTooLong: `user_id must be at most ${FILE_CHOICES.textFieldMaxChars} characters`,
  unsupportedContentType: 'Content-Type must be multipart/form-data or application/json',
  multipartNoFile: "Multipart body must contain the bytes in a part named 'file'",
  multipartExtraFile: "Multipart body must contain exactly one file part, named 'file'",
  multipartFieldTooLong: `Multipart fields must be at most ${FILE_CHOICES.multipartFieldMaxBytes} bytes`,
  multipartTooManyParts: 'Multipart body has too many parts',
  multipartMalformed: 'Multipart body is malformed',
  fieldRepeated: (name: string) => `${name} must be given once`,
  limitInvalid: `limit must be an integer between ${LIMITS.fileListMin} and ${LIMITS.fileListMax}`,
  stateInvalid: `state must be one of: ${FILE_STATES.join(', ')}`,
  cursorInvalid: 'cursor is invalid; pass next_cursor from a previous response unchanged',
  notUploaded: 'No bytes have been uploaded for this file; PUT them to upload.url before completing',
  fileDeleted: 'File has been deleted',
  uploadAlreadyCompleted: 'Upload was already completed; the object can no longer be replaced',
  uploadLengthRequired: 'Content-Length header is required',
  uploadLengthMismatch: (given: number, signed: number) =>
    `Content-Length ${given} does not match the signed size ${signed}`,
  uploadTypeMismatch: (expected: string) => `Content-Type must be ${expected}, as given in upload.headers`,
  outputNotFound: 'Output not found',
  rangeNotSatisfiable: 'Requested range is not satisfiable',
} as const;

/** failure_reason texts of files that ingest rejected. */
export const FILE_FAILURE_REASONS = {
  notMedia: 'File content is not a recognized image or video',
  undecodableImage: 'Image data could not be decoded (corrupt or truncated)',
  undecodableVideo: 'Video data could not be decoded (corrupt or truncated)',
  missingBytes: 'Uploaded bytes are missing',
  moderated: 'File was rejected by content moderation',
  mimeMismatch: (declared: string, actual: string) =>
    `Declared mime_type '${declared}' does not match the file content (${actual})`,
} as const;

// ---- MIME types -----------------------------------------------------------------------------

/** Aliases that name the same media type; both sides are compared after this mapping. */
const MIME_ALIASES: Readonly<Record<string, string>> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/x-png': 'image/png',
  'video/x-m4v': 'video/mp4',
  'video/x-quicktime': 'video/quicktime',
};

const TOKEN = '[A-Za-z0-9!#$&^_.+\\-]+';
const MIME_RE = new RegExp(`^(${TOKEN})/(${TOKEN})\\s*(;.*)?$`);

/**
 * The essence of a MIME type (lower case, parameters dropped), or null when it is not `type/subtype`.
 * @example normalizeMimeType('Image/PNG; q=1') // 'image/png'
 */
export function normalizeMimeType(value: string): string | null {
  const m = MIME_RE.exec(value.trim());
  if (!m) return null;
  return `${m[1]}/${m[2]}`.toLowerCase();
}

/** True when two MIME types name the same media type (aliases such as image/jpg = image/jpeg count). */
export function sameMediaType(a: string, b: string): boolean {
  const x = normalizeMimeType(a);
  const y = normalizeMimeType(b);
  if (x === null || y === null) return false;
  return (MIME_ALIASES[x] ?? x) === (MIME_ALIASES[y] ?? y);
}

// ---- request checks -------------------------------------------------------------------------

export type FileCheck<T> = { ok: true; value: T } | { ok: false; detail: string };

/** Fields shared by both upload modes, checked and defaulted. */
export interface FileFields {
  purpose: FilePurpose;
  filename: string | null;
  user_id: string | null;
  /** ms since the epoch, or null when no TTL was asked for. */
  expiresAt: number | null;
  /** Declared MIME essence, or null when none was declared. */
  mime_type: string | null;
}

/** A checked presigned (JSON) upload request. */
export interface PresignedFileRequest extends FileFields {
  mime_type: string;
  size_bytes: number;
}

const DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Parses an RFC 3339 date-time with a time zone to ms since the epoch; null when it is not one
 * (calendar dates that do not exist, such as February 31, included).
 */
export function parseDateTime(value: string): number | null {
  const m = DATE_TIME_RE.exec(value);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return null;
  const ms = Date.parse(value.replace(' ', 'T'));
  return Number.isNaN(ms) ? null : ms;
}

type Fail = { ok: false; detail: string };
const fail = (detail: string): Fail => ({ ok: false, detail });

function checkText(value: unknown, invalid: string, tooLong: string): FileCheck<string | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value !== 'string') return fail(invalid);
  if ([...value].length > FILE_CHOICES.textFieldMaxChars) return fail(tooLong);
  return { ok: true, value };
}

function checkMime(value: unknown): FileCheck<string | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value !== 'string') return fail(FILE_DETAILS.mimeTypeInvalid);
  const mime = normalizeMimeType(value);
  if (mime === null) return fail(FILE_DETAILS.mimeTypeInvalid);
  if (!mime.startsWith('image/') && !mime.startsWith('video/')) return fail(FILE_DETAILS.mimeTypeNotMedia);
  return { ok: true, value: mime };
}

function checkFields(input: Record<string, unknown>, nowMs: number): FileCheck<FileFields> {
  const mime = checkMime(input.mime_type);
  if (!mime.ok) return mime;
  let purpose: FilePurpose = FILE_CHOICES.defaultPurpose;
  if (input.purpose !== undefined && input.purpose !== null) {
    if (!FILE_PURPOSES.includes(input.purpose as FilePurpose)) return fail(FILE_DETAILS.purposeInvalid);
    purpose = input.purpose as FilePurpose;
  }
  let expiresAt: number | null = null;
  if (input.expires_at !== undefined && input.expires_at !== null) {
    const parsed = typeof input.expires_at === 'string' ? parseDateTime(input.expires_at) : null;
    if (parsed === null) return fail(FILE_DETAILS.expiresAtInvalid);
    if (parsed <= nowMs) return fail(FILE_DETAILS.expiresAtPast);
    expiresAt = parsed;
  }
  const filename = checkText(input.filename, FILE_DETAILS.filenameInvalid, FILE_DETAILS.filenameTooLong);
  if (!filename.ok) return filename;
  const userId = checkText(input.user_id, FILE_DETAILS.userIdInvalid, FILE_DETAILS.userIdTooLong);
  if (!userId.ok) return userId;
  return {
    ok: true,
    value: { purpose, filename: filename.value, user_id: userId.value, expiresAt, mime_type: mime.value },
  };
}

/**
 * Checks the JSON body of a presigned upload request (POST /v1/files, application/json).
 * Unknown fields are ignored. Fields are checked in the order mime_type, size_bytes, purpose,
 * expires_at, filename, user_id; the first problem is reported.
 * @param body the parsed JSON body
 * @param nowMs the current time, for `expires_at must be in the future`
 * @example validatePresignedFileRequest({ mime_type: 'image/png', size_bytes: 10 }, Date.now())
 */
export function validatePresignedFileRequest(body: unknown, nowMs: number): FileCheck<PresignedFileRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return fail(FILE_DETAILS.bodyNotObject);
  const input = body as Record<string, unknown>;
  if (input.mime_type === undefined || input.mime_type === null) return fail(FILE_DETAILS.mimeTypeRequired);
  const mime = checkMime(input.mime_type);
  if (!mime.ok) return mime;
  const size = input.size_bytes;
  if (size === undefined || size === null) return fail(FILE_DETAILS.sizeRequired);
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > LIMITS.presignedMaxBytes)
    return fail(FILE_DETAILS.sizeInvalid);
  const fields = checkFields(input, nowMs);
  if (!fields.ok) return fields;
  return { ok: true, value: { ...fields.value, mime_type: mime.value as string, size_bytes: size } };
}

/** Names of the text parts accepted beside `file` in a multipart upload; other parts are ignored. */
export const INLINE_FIELD_NAMES = ['purpose', 'filename', 'expires_at', 'user_id', 'mime_type'] as const;

/**
 * Checks the text parts of an inline (multipart) upload: purpose, filename, expires_at, user_id and
 * mime_type, all optional. An empty part counts as absent.
 * @param fields part name → value, as received
 * @param nowMs the current time, for `expires_at must be in the future`
 */
export function validateInlineFileFields(
  fields: Readonly<Record<string, string>>,
  nowMs: number,
): FileCheck<FileFields> {
  const input: Record<string, unknown> = {};
  for (const name of INLINE_FIELD_NAMES) {
    const v = fields[name];
    if (v !== undefined && v !== '') input[name] = v;
  }
  return checkFields(input, nowMs);
}

/** A checked GET /v1/files query. */
export interface FileListQuery {
  limit: number;
  cursor: string | null;
  purpose: FilePurpose | null;
  state: FileState | null;
}

function single(query: Record<string, unknown>, name: string): FileCheck<string | null> {
  const v = query[name];
  if (v === undefined) return { ok: true, value: null };
  if (typeof v !== 'string') return fail(FILE_DETAILS.fieldRepeated(name));
  return { ok: true, value: v };
}

/**
 * Checks the query of GET /v1/files: limit (integer 1..100, default 25), cursor (opaque, checked by
 * whoever decodes it), purpose and state filters. Unknown parameters are ignored.
 * @param query the parsed query string (a value is an array when the parameter is repeated)
 */
export function validateFileListQuery(query: unknown): FileCheck<FileListQuery> {
  const q = (typeof query === 'object' && query !== null ? query : {}) as Record<string, unknown>;
  const limitRaw = single(q, 'limit');
  if (!limitRaw.ok) return limitRaw;
  let limit: number = LIMITS.fileListDefault;
  if (limitRaw.value !== null) {
    if (!/^\d+$/.test(limitRaw.value)) return fail(FILE_DETAILS.limitInvalid);
    limit = Number(limitRaw.value);
    if (limit < LIMITS.fileListMin || limit > LIMITS.fileListMax) return fail(FILE_DETAILS.limitInvalid);
  }
  const cursor = single(q, 'cursor');
  if (!cursor.ok) return cursor;
  if (cursor.value === '') return fail(FILE_DETAILS.cursorInvalid);
  const purpose = single(q, 'purpose');
  if (!purpose.ok) return purpose;
  if (purpose.value !== null && !FILE_PURPOSES.includes(purpose.value as FilePurpose))
    return fail(FILE_DETAILS.purposeInvalid);
  const state = single(q, 'state');
  if (!state.ok) return state;
  if (state.value !== null && !FILE_STATES.includes(state.value as FileState))
    return fail(FILE_DETAILS.stateInvalid);
  return {
    ok: true,
    value: {
      limit,
      cursor: cursor.value,
      purpose: purpose.value as FilePurpose | null,
      state: state.value as FileState | null,
    },
  };
}
