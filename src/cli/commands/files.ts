/**
 * `genpipe files upload|list|get|delete`: the file store of the agents surface.
 */
import { type Command, Option } from 'commander';
import type { ApiFile, FilePurpose, FileState, UploadMode, UploadResult } from '../../client/index.ts';
import { formatBytes, formatDuration, formatSize } from '../../pipeline/progress/format.ts';
import { FILE_PURPOSES, FILE_STATES } from '../../spec/index.ts';
import { AGAINST_SERVE, addExamples, type Examples } from '../command-examples.ts';
import {
  addPollOption,
  addServiceOptions,
  type ClientFlags,
  checkTimeoutWaits,
  idArg,
  intArg,
  secondsArg,
} from '../command-flags.ts';
import { requireFile } from '../local-path.ts';
import type { CommandContext } from '../make-client.ts';
import { runWithClient } from '../run-with-client.ts';
import { UsageError } from '../usage-error.ts';

/** Upload modes of the command line. */
export const UPLOAD_MODES: readonly UploadMode[] = ['auto', 'inline', 'presigned'];

const DURATION_UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Reads --expires-at: an RFC 3339 date-time, or a time from now such as `90m`, `12h`, `7d`.
 *
 * @param value - the flag's text
 * @param now - the current time in ms
 * @returns the ISO date-time to send
 * @throws UsageError when it is neither
 * @example expiresAtArg('2h', Date.UTC(2030, 0, 1)) // '2030-01-01T02:00:00.000Z'
 */
export function expiresAtArg(value: string, now = Date.now()): string {
  const rel = /^\+?(\d+(?:\.\d+)?)([smhd])$/.exec(value.trim());
  if (rel) return new Date(now + Number(rel[1]) * (DURATION_UNITS[rel[2] as string] as number)).toISOString();
  const at = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value.trim()) || Number.isNaN(at)) {
    throw new UsageError(
      `--expires-at expects an ISO date-time (2030-01-01T00:00:00Z) or a time from now (90m, 12h, 7d) but received '${value}'`,
    );
  }
  return new Date(at).toISOString();
}

/** The lines describing a file, for people. */
export function fileLines(file: ApiFile): string[] {
  const lines = [`file ${file.id}  ${file.state}`];
  lines.push(`  filename: ${file.filename ?? '(none)'}`);
  lines.push(`  mime_type: ${file.mime_type}   size: ${formatSize(file.size_bytes)}`);
  lines.push(`  purpose: ${file.purpose}   created: ${file.created_at}`);
  if (file.expires_at) lines.push(`  expires: ${file.expires_at}`);
  if (file.deleted_at) lines.push(`  deleted: ${file.deleted_at}`);
  if (file.user_id) lines.push(`  user_id: ${file.user_id}`);
  if (file.failure_reason) lines.push(`  failure_reason: ${file.failure_reason}`);
  return lines;
}

/** An upload with its times: the transfer's own, and the wait until the file was ready apart. */
export interface TimedUpload extends UploadResult {
  /** From the first byte of the upload's first call until the service had them all (recorded or completed). */
  transferMs: number;
  /** The wait after the transfer until the service marked the file ready; null when not waited for. */
  readyWaitMs: number | null;
}

/** The JSON of an upload result (snake_case like the API). */
export function uploadJson(result: UploadResult, path: string): Record<string, unknown> {
  return {
    path,
    file: result.file,
    sha256: result.sha256,
    bytes: result.bytes,
    mode: result.mode,
    request_id: result.requestId,
  };
}

interface UploadFlags extends ClientFlags {
  mode: UploadMode;
  purpose?: FilePurpose;
  mimeType?: string;
  expiresAt?: string;
  userId?: string;
  wait?: boolean;
  timeout?: number;
}

/**
 * Uploads one local file through the client, with a progress line on a terminal, and with `wait`
 * waits until the service marked it ready; the transfer and the wait are timed apart.
 *
 * @param ctx - the command context
 * @param path - the file (checked to exist)
 * @param options - mode, purpose, mimeType, expiresAt, userId, wait (until ready), timeoutMs (of the wait)
 */
export async function uploadPath(
  ctx: CommandContext,
  path: string,
  options: {
    mode?: UploadMode;
    purpose?: FilePurpose;
    mimeType?: string;
    expiresAt?: string;
    userId?: string;
    wait?: boolean;
    timeoutMs?: number;
  },
): Promise<TimedUpload> {
  const progress = ctx.progress(`uploading ${path}`);
  const started = performance.now();
  let result: UploadResult;
  try {
    result = await ctx.client.files.upload(path, {
      mode: options.mode ?? 'auto',
      signal: ctx.signal,
      onProgress: (p) => progress.update(p.bytesSent, p.totalBytes),
      ...(options.purpose ? { purpose: options.purpose } : {}),
      ...(options.mimeType ? { mimeType: options.mimeType } : {}),
      ...(options.expiresAt ? { expiresAt: options.expiresAt } : {}),
      ...(options.userId ? { userId: options.userId } : {}),
    });
  } finally {
    progress.end();
  }
  const transferred = performance.now();
  const transferMs = transferred - started;
  if (!options.wait) return { ...result, transferMs, readyWaitMs: null };
  const file = await ctx.client.files.waitUntilReady(result.file.id, {
    signal: ctx.signal,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
  return { ...result, file, transferMs, readyWaitMs: performance.now() - transferred };
}

/**
 * The lines of an upload's times: the transfer's own (its speed is the bytes over it alone) and the
 * wait until the file was ready, when waited for.
 *
 * @example uploadTimeLines(timed) // ['  uploaded: inline, 5546 bytes in 21ms (257.9 KiB/s)', '  ready: 1.0s after the transfer']
 */
export function uploadTimeLines(timed: TimedUpload): string[] {
  const rate = formatBytes(Math.round(timed.bytes / Math.max(0.001, timed.transferMs / 1000)));
  const lines = [
    `  uploaded: ${timed.mode}, ${timed.bytes} bytes in ${formatDuration(timed.transferMs)} (${rate}/s)`,
  ];
  if (timed.readyWaitMs !== null)
    lines.push(`  ready: ${formatDuration(timed.readyWaitMs)} after the transfer`);
  return lines;
}

const UPLOAD_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'upload a sample photo as an input and wait until it is ready',
      line: 'genpipe files upload samples/photos/beach.jpg --purpose input --wait',
    },
    {
      comment: 'a video by a presigned PUT, deleted by the service after 7 days; the file as JSON',
      line: 'genpipe files upload samples/clips/pattern.mp4 --mode presigned --expires-at 7d --json',
    },
  ],
};

function registerUpload(files: Command): void {
  const cmd = files
    .command('upload <path>')
    .description('Upload a file, checked locally first (streamed from disk; sha256 computed on the way)')
    .addOption(
      new Option(
        '--mode <mode>',
        'inline (multipart), presigned (PUT to a signed URL), or auto: inline up to 20 MiB, presigned above it and when inline answers 413',
      )
        .choices(UPLOAD_MODES)
        .default('auto'),
    )
    .addOption(
      new Option('--purpose <purpose>', "what the file is for; the service's default is input").choices(
        FILE_PURPOSES,
      ),
    )
    .option(
      '--mime-type <type>',
      'MIME type of the bytes (default: told from the first 64 KiB; needed when they do not tell it)',
    )
    .option(
      '--expires-at <time>',
      'when the service may delete the file: an RFC 3339 date-time, or a time from now such as 90m, 12h or 7d (default: not set)',
    )
    .option('--user-id <id>', 'opaque end-user tag, echoed unchanged')
    .option('--wait', 'wait until the file is ready (exit 1 when it failed)')
    .option(
      '--timeout <seconds>',
      'with --wait: give up waiting after this long (exit 1; default: no limit)',
      secondsArg(0),
    );
  addPollOption(addServiceOptions(addExamples(cmd, UPLOAD_EXAMPLES))).action(
    (path: string, flags: UploadFlags) =>
      runWithClient(flags, async (ctx) => {
        checkTimeoutWaits(flags, flags.wait === true, '--wait');
        requireFile(path, 'files upload');
        const expiresAt = flags.expiresAt === undefined ? undefined : expiresAtArg(flags.expiresAt);
        // The file as the service would take it, before a byte is sent (exit 1 naming the rule). Its
        // type, as the check told it from the first 64 KiB (or as --mime-type gives it), is sent.
        const { checkUploadFile } = await import('../local-check.ts');
        const { mime } = await checkUploadFile(path, flags.mimeType);
        const started = performance.now();
        const timed = await uploadPath(ctx, path, {
          mode: flags.mode,
          ...(flags.purpose ? { purpose: flags.purpose } : {}),
          mimeType: flags.mimeType ?? mime,
          ...(expiresAt ? { expiresAt } : {}),
          ...(flags.userId ? { userId: flags.userId } : {}),
          wait: flags.wait === true,
          ...(flags.timeout !== undefined ? { timeoutMs: flags.timeout * 1000 } : {}),
        });
        // The parts rounded down and the whole up, so that the transfer and the wait never add up to
        // more than the time it all took (each rounded to the nearest could: 168 + 167 > 334).
        const json = {
          ...uploadJson(timed, path),
          elapsed_ms: Math.ceil(performance.now() - started),
          transfer_ms: Math.floor(timed.transferMs),
          ready_wait_ms: timed.readyWaitMs === null ? null : Math.floor(timed.readyWaitMs),
        };
        ctx.result(json, () => [
          ...fileLines(timed.file),
          ...uploadTimeLines(timed),
          `  sha256: ${timed.sha256}`,
          `  request id: ${timed.requestId}`,
        ]);
      }),
  );
}

interface ListFlags extends ClientFlags {
  purpose?: FilePurpose;
  state?: FileState;
  limit?: number;
}

const MAX_PAGE = 100;

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? [];
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

const LIST_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    { comment: 'the 20 newest files that are ready', line: 'genpipe files list --state ready --limit 20' },
    { comment: 'every input file, as JSON', line: 'genpipe files list --purpose input --json' },
  ],
};

function registerList(files: Command): void {
  const cmd = files
    .command('list')
    .description('List files, newest first (every page)')
    .addOption(new Option('--purpose <purpose>', 'only files of this purpose').choices(FILE_PURPOSES))
    .addOption(
      new Option(
        '--state <state>',
        'only files in this state; deleted files are listed only when asked for',
      ).choices(FILE_STATES),
    )
    .option('--limit <n>', 'show at most n files (default: all)', intArg(1));
  addServiceOptions(addExamples(cmd, LIST_EXAMPLES)).action((flags: ListFlags) =>
    runWithClient(flags, async (ctx) => {
      const found: ApiFile[] = [];
      const pageSize = Math.min(MAX_PAGE, flags.limit ?? MAX_PAGE);
      for await (const file of ctx.client.files.list({
        limit: pageSize,
        signal: ctx.signal,
        ...(flags.purpose ? { purpose: flags.purpose } : {}),
        ...(flags.state ? { state: flags.state } : {}),
      })) {
        found.push(file);
        if (flags.limit !== undefined && found.length >= flags.limit) break;
      }
      ctx.result(found, () =>
        found.length === 0
          ? ['no files']
          : table([
              ['ID', 'STATE', 'PURPOSE', 'SIZE', 'MIME TYPE', 'CREATED', 'FILENAME'],
              ...found.map((f) => [
                f.id,
                f.state,
                f.purpose,
                formatBytes(f.size_bytes),
                f.mime_type,
                f.created_at,
                f.filename ?? '',
              ]),
            ]),
      );
    }),
  );
}

/** What the commands' `<id>` is. */
const FILE_ID = 'the file id (a UUID)';

const GET_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a file by its id (as `files upload` or `files list` printed it)',
      line: 'genpipe files get <file-id>',
    },
    { comment: 'the same as JSON', line: 'genpipe files get <file-id> --json' },
  ],
};

const DELETE_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    { comment: 'delete a file (again: harmless)', line: 'genpipe files delete <file-id>' },
    { comment: 'and say so as JSON', line: 'genpipe files delete <file-id> --json' },
  ],
};

function registerGet(files: Command): void {
  const cmd = files.command('get').description('Show a file').argument('<id>', FILE_ID, idArg('file'));
  addServiceOptions(addExamples(cmd, GET_EXAMPLES)).action((id: string, flags: ClientFlags) =>
    runWithClient(flags, async (ctx) => {
      const file = await ctx.client.files.get(id, { signal: ctx.signal });
      ctx.result(file, () => fileLines(file));
    }),
  );
}

function registerDelete(files: Command): void {
  const cmd = files
    .command('delete')
    .description('Delete a file (soft delete; repeating is harmless)')
    .argument('<id>', FILE_ID, idArg('file'));
  addServiceOptions(addExamples(cmd, DELETE_EXAMPLES)).action((id: string, flags: ClientFlags) =>
    runWithClient(flags, async (ctx) => {
      await ctx.client.files.delete(id, { signal: ctx.signal });
      ctx.result({ id, deleted: true }, () => [`deleted file ${id}`]);
    }),
  );
}

/** Registers `genpipe files upload|list|get|delete`. */
export function registerFiles(program: Command): void {
  const files = program.command('files').description('Upload, list, show and delete files (agents surface)');
  registerUpload(files);
  registerList(files);
  registerGet(files);
  registerDelete(files);
}
