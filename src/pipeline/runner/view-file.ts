/**
 * The batch's finished items on disk: each one's report view (report/report-view.ts) appended as one
 * JSON line to a scratch file of the out dir, and read back by its offset when the reports are written,
 * so the memory a batch keeps per finished item is only its small index entry (runner/batch-items.ts).
 *
 * The file, `<out>/report.views.<random>.tmp`, is removed from its folder as soon as it is opened: the
 * batch reads and writes it through its descriptor, and the system frees it when the batch closes it or
 * its process dies, so even a kill leaves nothing behind. (Where a file cannot be removed while open, it
 * stays until close; the batch-level scratch sweep removes it after a crash, like any `report.*.tmp`.)
 *
 * A line whose item was replaced (a later item at its place, in a watch) is dead; once the dead lines
 * outweigh the live ones (and COMPACT_MIN_DEAD_BYTES), the live lines are copied to a new file, unless
 * a report is being written from the old offsets (see hold).
 */
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Item } from '../item.ts';

/** Lines appended are written to the file once they reach this many bytes (or a read needs them). */
const WRITE_BYTES = 64 * 1024;

/** Dead bytes below which the file is never compacted. */
export const COMPACT_MIN_DEAD_BYTES = 64 * 1024 * 1024;

/** Where a view is in the file. */
export interface ViewSpot {
  offset: number;
  length: number;
}

interface OpenFile {
  fd: number;
  /** Set when the file could not be removed while open: removed at close. */
  path: string | null;
}

function openScratch(dir: string): OpenFile {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `report.views.${randomUUID().slice(0, 8)}.tmp`);
  const fd = openSync(path, 'w+', 0o600);
  try {
    unlinkSync(path);
    return { fd, path: null };
  } catch {
    return { fd, path };
  }
}

function closeScratch(file: OpenFile): void {
  closeSync(file.fd);
  if (file.path) rmSync(file.path, { force: true });
}

export class ViewFile {
  private file: OpenFile | null = null;
  /** Bytes appended, written or not. */
  private size = 0;
  /** Bytes written to the file. */
  private written = 0;
  private pending: Buffer[] = [];
  private deadBytes = 0;
  /** Reports being written from the current offsets: no compaction meanwhile. */
  private holds = 0;
  /** The disk's refusal of a write: no line is appended after it (see flush). */
  private refused: unknown = null;

  /**
   * @param dir the folder of the file (the out dir)
   * @param compactMinDeadBytes dead bytes below which the file is never compacted
   */
  constructor(
    private readonly dir: string,
    private readonly compactMinDeadBytes = COMPACT_MIN_DEAD_BYTES,
  ) {}

  /**
   * Appends the view as one line and returns where it is.
   *
   * @throws the file system's error when the file cannot be made or written (the caller keeps the view)
   */
  append(view: Item): ViewSpot {
    if (this.refused !== null) throw this.refused;
    this.file ??= openScratch(this.dir);
    const line = Buffer.from(`${JSON.stringify(view)}\n`, 'utf8');
    const spot = { offset: this.size, length: line.length };
    this.pending.push(line);
    this.size += line.length;
    if (this.size - this.written >= WRITE_BYTES) this.flush();
    return spot;
  }

  /** The view at `spot`: from the file, or from the lines not written yet. */
  read(spot: ViewSpot): Item {
    let buf: Buffer;
    if (spot.offset >= this.written) {
      this.pending = [this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending)];
      const from = spot.offset - this.written;
      buf = this.pending[0]!.subarray(from, from + spot.length);
    } else {
      buf = Buffer.allocUnsafe(spot.length);
      readFully(this.file!.fd, buf, spot.offset);
    }
    return JSON.parse(buf.toString('utf8', 0, spot.length - 1)) as Item;
  }

  /** The view at `spot` is no longer read (replaced): counted towards compaction. */
  drop(spot: ViewSpot): void {
    this.deadBytes += spot.length;
  }

  /**
   * Copies the live lines (`live`: every spot still read) to a new file when the dead ones outweigh
   * them and no report holds the offsets; updates the spots in place.
   */
  compactIfWorth(live: () => Iterable<ViewSpot>): void {
    const liveBytes = this.size - this.deadBytes;
    if (this.holds > 0 || this.deadBytes < this.compactMinDeadBytes || this.deadBytes < liveBytes) return;
    if (this.refused !== null) return; // the disk refuses writes: the lines stay where they are
    this.flush();
    const old = this.file!;
    const next = openScratch(this.dir);
    let at = 0;
    try {
      for (const spot of live()) {
        const buf = Buffer.allocUnsafe(spot.length);
        readFully(old.fd, buf, spot.offset);
        writeFully(next.fd, buf, at);
        spot.offset = at;
        at += spot.length;
      }
    } catch (err) {
      closeScratch(next);
      throw err;
    }
    closeScratch(old);
    this.file = next;
    this.size = at;
    this.written = at;
    this.deadBytes = 0;
  }

  /** While a report is written from the spots: no compaction until the returned release is called. */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (!released) this.holds--;
      released = true;
    };
  }

  /** Bytes of the file (lines appended, dead ones included). */
  get bytes(): number {
    return this.size;
  }

  /** Frees the file (its views can no longer be read). */
  close(): void {
    if (!this.file) return;
    const file = this.file;
    this.file = null;
    this.pending = [];
    closeScratch(file);
  }

  /**
   * Writes the lines appended since the last write. When the disk refuses them (full, read-only), they
   * stay in memory, where `read` finds them, and no line is appended any more (`append` throws: the
   * caller holds the view itself).
   */
  private flush(): void {
    if (this.pending.length === 0 || !this.file) return;
    const buf = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    this.pending = [buf];
    try {
      writeFully(this.file.fd, buf, this.written);
    } catch (err) {
      this.refused = err;
      throw err;
    }
    this.written += buf.length;
    this.pending = [];
  }
}

function readFully(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, position + done);
    if (n === 0) throw new Error('report views: the scratch file ended early');
    done += n;
  }
}

function writeFully(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done);
}
