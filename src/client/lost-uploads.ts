/**
 * What uploads whose answers were lost left at the service. An upload (POST /v1/files) costs nothing,
 * so one whose answer was lost is sent again (retry-policy.ts, class `upload`); the file the lost answer
 * may have stored is found in the file list afterwards — its name, size and purpose, created while the
 * upload ran — and deleted. The file list is all there is to find it by: a file carries neither the
 * request id it was made with nor a hash of its bytes. So a file is deleted only when it can be told
 * apart: not one this client was answered with, and no other upload of the same name and size ran in
 * this client at the same time; otherwise it is left (an unused upload costs nothing) and said so.
 */
import type { ApiFile, FilePurpose } from '../spec/index.ts';

/** How far the service's clock may be from ours, for the window a lost upload's file was made in. */
const CLOCK_SKEW_MS = 60_000;
/** The most pages of the file list read to find them (newest first). */
const MAX_PAGES = 10;
/** How long the ids of answered uploads are remembered (longer than any upload's window). */
const ANSWERED_KEPT_MS = 60 * 60_000;

/** What tells an upload's file apart in the file list. */
export interface UploadSignature {
  filename: string | null;
  size: number | null;
  purpose: FilePurpose | undefined;
}

/** One upload as it runs: its lost answers, and whether another like it ran at the same time. */
export class UploadRun {
  readonly startedAt = Date.now();
  lost = 0;
  lostUntil = 0;
  shared = false;
  readonly requestIds = new Set<string>();

  constructor(readonly signature: UploadSignature) {}

  /** Notes that an attempt with `requestId` was sent and its answer lost. */
  answerLost(requestId: string): void {
    this.lost += 1;
    this.lostUntil = Date.now();
    this.requestIds.add(requestId);
  }
}

/** The calls of the files resource a sweep uses. */
export interface FileCalls {
  list(options: { purpose?: FilePurpose; limit?: number; signal?: AbortSignal }): AsyncIterable<ApiFile>;
  delete(id: string, options: { signal?: AbortSignal }): Promise<void>;
}

function keyOf(s: UploadSignature): string {
  return JSON.stringify([s.filename, s.size, s.purpose ?? null]);
}

/** The uploads of one client: those running, the files it was answered with, and the sweep. */
export class LostUploads {
  private readonly running = new Map<string, Set<UploadRun>>();
  private readonly answered = new Map<string, number>();

  /** Registers an upload as it starts; end() it when it is over. */
  begin(signature: UploadSignature): UploadRun {
    const run = new UploadRun(signature);
    const key = keyOf(signature);
    const others = this.running.get(key) ?? new Set<UploadRun>();
    if (others.size > 0) {
      run.shared = true;
      for (const o of others) o.shared = true;
    }
    others.add(run);
    this.running.set(key, others);
    return run;
  }

  end(run: UploadRun): void {
    const key = keyOf(run.signature);
    const set = this.running.get(key);
    set?.delete(run);
    if (set?.size === 0) this.running.delete(key);
  }

  /** Notes a file id this client was answered with (never an orphan). */
  answeredWith(id: string): void {
    const now = Date.now();
    this.answered.set(id, now);
    for (const [k, at] of this.answered) {
      if (now - at <= ANSWERED_KEPT_MS) break;
      this.answered.delete(k);
    }
  }

  /**
   * Finds and deletes the files `run`'s lost answers stored (see the module comment). Never throws: a
   * file it cannot find or delete is left, and `log` says so.
   *
   * @returns the ids deleted
   */
  async sweep(
    run: UploadRun,
    calls: FileCalls,
    log: (m: string) => void,
    signal?: AbortSignal,
  ): Promise<string[]> {
    if (run.lost === 0) return [];
    const { filename, size, purpose } = run.signature;
    const ids = [...run.requestIds].join(', ');
    const leftText = (why: string) =>
      `the upload of ${filename ?? 'a stream'} lost ${run.lost} answer(s) (request id ${ids}); ${why}`;
    if (filename === null || size === null || run.shared) {
      log(leftText('the files they may have stored are left: they cannot be told from other uploads'));
      return [];
    }
    try {
      const from = run.startedAt - CLOCK_SKEW_MS;
      const until = run.lostUntil + CLOCK_SKEW_MS;
      const found: ApiFile[] = [];
      let seen = 0;
      for await (const f of calls.list({
        limit: 100,
        ...(purpose ? { purpose } : {}),
        ...(signal ? { signal } : {}),
      })) {
        const at = Date.parse(f.created_at);
        if (at < from || ++seen > MAX_PAGES * 100) break;
        if (at > until || f.state === 'deleted' || this.answered.has(f.id)) continue;
        if (f.filename === filename && f.size_bytes === size) found.push(f);
      }
      if (found.length > run.lost) {
        log(leftText(`${found.length} files of its name and size were found: they are left`));
        return [];
      }
      for (const f of found) await calls.delete(f.id, signal ? { signal } : {});
      if (found.length > 0) {
        log(
          leftText(`deleted what they stored at the service: ${found.map((f) => `file ${f.id}`).join(', ')}`),
        );
      }
      return found.map((f) => f.id);
    } catch (err) {
      log(leftText(`the files they may have stored could not be looked for: ${(err as Error).message}`));
      return [];
    }
  }
}
