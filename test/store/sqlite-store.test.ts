/**
 * The SQLite journal against the Store contract, and what only it has: its schema versions (a journal
 * of version 1, 2 or 3 opens and is brought up to date).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/pipeline/store/key-fingerprint.ts';
import { defaultJournalPath, openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { defineStoreContract } from './store-contract.ts';

defineStoreContract('SQLite journal', {
  open: async (outDir) => openJournal({ outDir, lock: false, mountInfo: null }),
});

describe('SQLite journal schema versions', () => {
  let outDir: string;
  beforeEach(() => {
    outDir = mkdtempSync(join(tmpdir(), 'genpipe-store-schema-'));
  });
  afterEach(() => rmSync(outDir, { recursive: true, force: true }));

  it('opens a journal of version 2 (before quota state) and brings it to version 4', async () => {
    const j = openJournal({ outDir, mountInfo: null });
    await j.startBatch({ inputDir: outDir, service: 'http://svc.test' });
    await j.saveReference('style', 'h1', 'file-style');
    await j.close();
    const old = new Database(defaultJournalPath(outDir));
    old.exec('DROP TABLE job_durations; DROP TABLE quota_states');
    old.pragma('user_version = 2');
    old.close();

    const again = openJournal({ outDir, mountInfo: null });
    try {
      expect(again.testOnlyDatabase().pragma('user_version', { simple: true })).toBe(4);
      await again.startBatch({ inputDir: outDir, service: 'http://svc.test' });
      expect(await again.reference('style', 'h1')).toBe('file-style');
      const key = keyFingerprint('k');
      const state = {
        jobCeiling: 2,
        requestLimit: null,
        windowMs: null,
        blockedUntil: null,
        recentRequests: [],
      };
      await again.saveQuotaState('http://svc.test', key, state);
      expect(await again.quotaState('http://svc.test', key)).toMatchObject(state);
    } finally {
      await again.close();
    }
  });

  it('opens a journal of version 3 (before job durations) and brings it to version 4', async () => {
    const j = openJournal({ outDir, mountInfo: null });
    await j.close();
    const old = new Database(defaultJournalPath(outDir));
    old.exec('DROP TABLE job_durations');
    old.pragma('user_version = 3');
    old.close();

    const again = openJournal({ outDir, mountInfo: null });
    try {
      expect(again.testOnlyDatabase().pragma('user_version', { simple: true })).toBe(4);
      await again.recordJobDuration('http://svc.test', 'image|||', { runningAtMs: 0, doneByMs: 1200 });
      expect(await again.jobDurations('http://svc.test')).toEqual(
        new Map([['image|||', [{ runningAtMs: 0, doneByMs: 1200 }]]]),
      );
    } finally {
      await again.close();
    }
  });
});
