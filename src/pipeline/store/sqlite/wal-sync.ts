/**
 * The journal's durability, off the event loop. The connection commits with `synchronous = NORMAL`: a
 * commit appends its frames to the `-wal` file and returns without an fsync, so the event loop (every
 * item's stages, the answers from the service) never waits on the disk. A write's promise resolves only
 * once `durable()` has run an fdatasync of the `-wal` file, on libuv's thread pool, started after that
 * commit: then the frames are on disk, and SQLite's recovery finds the transaction after a power cut
 * exactly as with `synchronous = FULL` (each frame carries its salt and checksum; a checkpoint syncs the
 * WAL before it writes the database, and the database after). A killed process loses nothing either
 * way: committed frames are in the operating system's cache.
 *
 * Syncs are coalesced: every commit made before a sync starts is covered by it, so a batch of 64 jobs
 * changing state at once costs one fsync, and the commits made while it runs share the next one. The
 * directory is synced once, with the first sync, so the `-wal` file's own entry survives a power cut.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { dirname } from 'node:path';

export class WalSync {
  /** The sync not started yet that commits made now wait for (it covers them), or null. */
  private next: Promise<void> | null = null;
  /** The last sync asked for, settled or not: the next one starts after it. */
  private tail: Promise<void> = Promise.resolve();
  private file: FileHandle | null = null;
  private dirSynced = false;
  /** fdatasyncs made (for tests and the benches). */
  syncs = 0;

  /** @param walPath - the journal's `-wal` file (the journal's path and `-wal`) */
  constructor(private readonly walPath: string) {}

  /**
   * Resolves once every commit made before the call is on disk; rejects when the sync failed (the
   * journal then reports the write as not recorded).
   */
  durable(): Promise<void> {
    if (this.next) return this.next;
    const started = this.tail.then(() => {
      // From now on, commits wait for a sync of their own: this one may have read past them.
      if (this.next === started) this.next = null;
      return this.syncNow();
    });
    this.next = started;
    this.tail = started.catch(() => undefined);
    return started;
  }

  /** Closes the `-wal` file's handle once the syncs asked for have ended. */
  async close(): Promise<void> {
    await this.tail;
    const file = this.file;
    this.file = null;
    await file?.close().catch(() => undefined);
  }

  private async syncNow(): Promise<void> {
    if (!this.file) {
      try {
        this.file = await open(this.walPath, constants.O_RDONLY);
      } catch (err) {
        // No -wal file: the last connection's close checkpointed it into the database, synced.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
    }
    await this.file.datasync();
    this.syncs++;
    if (this.dirSynced) return;
    const dir = await open(dirname(this.walPath), constants.O_RDONLY);
    try {
      await dir.sync();
      this.dirSynced = true;
    } finally {
      await dir.close();
    }
  }
}
