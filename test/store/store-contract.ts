/**
 * The Store contract (src/pipeline/store/README.md) as vitest tests, for any implementation: call
 * defineStoreContract with a factory that opens a store of an out dir, and each test opens what it needs
 * in a fresh pair of folders. Reopening (close, then open the same out dir) stands for a crash and a
 * re-run: whatever a resolved write recorded must be there.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOB_DURATIONS_KEPT, RecentJobDurations } from '../../src/client/index.ts';
import { type Item, newItem, stepOf } from '../../src/pipeline/item.ts';
import { fileIdentity } from '../../src/pipeline/store/content-hash.ts';
import { keyFingerprint } from '../../src/pipeline/store/key-fingerprint.ts';
import type { Store } from '../../src/pipeline/store/store.ts';
import { patchItem, withFlatItem } from '../helpers/item-patch.ts';

/** What the contract needs of an implementation. */
export interface StoreFactory {
  /** A store of `outDir` (created when missing), NOT holding the out dir's lock yet. */
  open(outDir: string): Promise<Store>;
}

const NO_REFERENCES = { references: {} } as const;
const SERVICE = 'http://svc.test';

/** Defines the contract's tests for the stores `factory` opens. */
export function defineStoreContract(name: string, factory: StoreFactory): void {
  describe(`Store contract: ${name}`, () => {
    let dir: string;
    let inDir: string;
    let outDir: string;
    const opened: Store[] = [];

    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'genpipe-store-'));
      inDir = join(dir, 'in');
      outDir = join(dir, 'out');
      mkdirSync(inDir);
      mkdirSync(outDir);
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** A store of the out dir with a batch started (a run). */
    const session = async (service = SERVICE): Promise<Store> => {
      const s = await factory.open(outDir);
      opened.push(s);
      await s.startBatch({ inputDir: inDir, service, options: { concurrency: 2 } });
      return s;
    };
    const reopen = async (s: Store): Promise<Store> => {
      await s.close();
      return session();
    };

    /** A planned item for `name` (its file written with `bytes`: by default its own, so no two files share content). */
    const planned = (name: string, bytes = `hello from ${name}`): Item => {
      const abs = join(inDir, name);
      writeFileSync(abs, bytes);
      return patchItem(newItem(name, abs, Buffer.byteLength(bytes), 1), {
        state: 'planned',
        rule: { index: 0, match: '*' },
        inputAs: 'source',
        request: { type: 'image_edit', prompt: 'watercolor', source: { file_id: '$input' } },
      });
    };
    const uploaded = (it: Item): Item =>
      patchItem(it, {
        state: 'uploaded',
        upload: { mode: 'inline', fileId: `file-${it.input}`, sha256: null },
      });
    const submitted = (it: Item): Item =>
      patchItem(it, {
        state: 'submitted',
        requestId: `req-${it.input}`,
        generationId: `gen-${it.input}`,
        attempts: 1,
      });

    /** Takes an admitted item to `reported`, its output and result.json written in its place. */
    const finish = async (s: Store, start: Item): Promise<Item> => {
      let it = uploaded({ ...start, state: 'checked' });
      await s.save(it);
      it = patchItem(it, { requestId: `req-${it.input}`, attempts: 1 });
      await s.recordIntent(it);
      it = submitted(it);
      await s.save(it);
      const place = it.place ?? it.input;
      mkdirSync(join(outDir, place), { recursive: true });
      writeFileSync(join(outDir, place, 'output-0.png'), 'PNGDATA');
      it = patchItem(it, { state: 'downloaded', outputs: [`${place}/output-0.png`] });
      await s.save(it);
      writeFileSync(join(outDir, place, 'result.json'), '{}');
      it = { ...it, state: 'reported' };
      await s.save(it);
      return it;
    };

    describe('admit', () => {
      it('admits a file never seen fresh, in its own input path, keyed by its content hash', async () => {
        const s = await session();
        const d = await s.admit(planned('a.png'), NO_REFERENCES);
        expect(d).toMatchObject({
          action: 'fresh',
          reason: null,
          item: { place: 'a.png', state: 'planned' },
        });
        expect(d.item.contentHash).toMatch(/^[0-9a-f]{64}$/);
      });

      it('reports a finished file done after a restart, and a file left uploaded resumed there', async () => {
        let s = await session();
        await finish(s, (await s.admit(planned('a.png'), NO_REFERENCES)).item);
        const b = (await s.admit(planned('b.png'), NO_REFERENCES)).item;
        await s.save(uploaded({ ...b, state: 'checked' }));
        s = await reopen(s);
        expect(withFlatItem(await s.admit(planned('a.png'), NO_REFERENCES))).toMatchObject({
          action: 'done',
          item: { state: 'reported', generationId: 'gen-a.png' },
        });
        expect(withFlatItem(await s.admit(planned('b.png'), NO_REFERENCES))).toMatchObject({
          action: 'resume',
          item: { state: 'uploaded', upload: { fileId: 'file-b.png' } },
        });
      });

      it('resumes a submitted generation at submitted: it is polled, never created again', async () => {
        let s = await session();
        const a = (await s.admit(planned('a.png'), NO_REFERENCES)).item;
        await s.save(uploaded(a));
        await s.save(submitted(uploaded(a)));
        s = await reopen(s);
        expect(withFlatItem(await s.admit(planned('a.png'), NO_REFERENCES))).toMatchObject({
          action: 'resume',
          item: { state: 'submitted', generationId: 'gen-a.png' },
        });
      });

      it('redoes a file whose bytes changed, in a place of its own while the old one holds work', async () => {
        let s = await session();
        await finish(s, (await s.admit(planned('a.png', 'version one'), NO_REFERENCES)).item);
        s = await reopen(s);
        expect(await s.placeFor('a.png')).toBe('a-1.png');
        expect(await s.placeFor('c.png')).toBe('c.png');
        const two = await s.admit(planned('a.png', 'version two'), NO_REFERENCES);
        expect(two).toMatchObject({ action: 'fresh', item: { place: 'a-1.png' } });
        // The first version comes back: its finished work, in its own place.
        s = await reopen(s);
        expect(await s.admit(planned('a.png', 'version one'), NO_REFERENCES)).toMatchObject({
          action: 'done',
          item: { place: 'a.png' },
        });
      });
    });

    describe('places of items kept in no row', () => {
      it('gives each input a place no other input of the session has, whatever their names print as', async () => {
        const s = await session();
        expect(await s.placeFor('x\\y.png')).toBe('x%5Cy.png');
        expect(await s.placeFor('x\\y.png')).toBe('x%5Cy.png'); // the same input: its place again
        // A name that is not valid UTF-8 prints as x\y.png too: another input (raw-names.ts inputKey).
        expect(await s.placeFor('x\\y.png', '/eA==')).toBe('x%5Cy-1.png');
        const other = await s.admit(planned('x%5Cy.png'), NO_REFERENCES);
        expect(other.item.place).toBe('x%5Cy-2.png');
      });
    });

    describe('intent before action', () => {
      it('a create recorded as intended with no generation id after it is an outcome unknown', async () => {
        let s = await session();
        const a = uploaded((await s.admit(planned('a.png'), NO_REFERENCES)).item);
        await s.save(a);
        await s.recordIntent(patchItem(a, { requestId: 'req-lost', attempts: 1 }));
        s = await reopen(s); // killed while the create was on the wire
        const d = await s.admit(planned('a.png'), NO_REFERENCES);
        expect(d).toMatchObject({ action: 'fail', item: { state: 'failed', failedAt: 'submit' } });
        expect(d.reason).toContain('req-lost');
        // Failed by the policy, it stays failed: the next run reports it again, never resubmits.
        s = await reopen(s);
        expect((await s.admit(planned('a.png'), NO_REFERENCES)).action).not.toBe('resume');
      });

      it('resubmits such a create only when asked to, keeping the earlier request id', async () => {
        let s = await session();
        const a = uploaded((await s.admit(planned('a.png'), NO_REFERENCES)).item);
        await s.save(a);
        await s.recordIntent(patchItem(a, { requestId: 'req-lost', attempts: 1 }));
        s = await reopen(s);
        const d = await s.admit(planned('a.png'), NO_REFERENCES, { resubmitUnknown: true });
        expect(withFlatItem(d)).toMatchObject({
          action: 'resume',
          item: { state: 'uploaded', requestId: null },
        });
        expect(stepOf(d.item).earlierAttempts?.map((x) => x.request_id)).toEqual(['req-lost']);
      });

      it('refuses an intent without a request id, and a save of service work never admitted', async () => {
        const s = await session();
        const a = uploaded((await s.admit(planned('a.png'), NO_REFERENCES)).item);
        await expect(s.recordIntent(a)).rejects.toThrow(/request id/);
        await expect(s.save(submitted(planned('z.png')))).rejects.toThrow();
      });
    });

    describe('work whose input vanished', () => {
      it('hands back a submitted generation whose input this batch did not admit, unless skipped', async () => {
        let s = await session();
        const b = (await s.admit(planned('b.png'), NO_REFERENCES)).item;
        await s.save(submitted(uploaded(b)));
        const a = (await s.admit(planned('a.png'), NO_REFERENCES)).item;
        await s.save(uploaded(a)); // uploaded only: nothing to collect
        s = await reopen(s);
        expect(await s.vanishedInFlight((input) => input === 'b.png')).toEqual([]);
        const back = await s.vanishedInFlight();
        expect(back.map((d) => [d.action, d.item.input, d.item.state])).toEqual([
          ['resume', 'b.png', 'submitted'],
        ]);
        // It is bound for save: its progress is recorded.
        await s.save({ ...back[0]!.item, state: 'completed' });
        expect(await s.vanishedInFlight()).toEqual([]);
      });

      it('lists finished files with the size and mtime their item had', async () => {
        const s = await session();
        const a = await finish(s, (await s.admit(planned('a.png', 'four'), NO_REFERENCES)).item);
        const b = (await s.admit(planned('b.png'), NO_REFERENCES)).item;
        await s.save(submitted(uploaded(b)));
        expect(await s.finishedFiles()).toEqual(new Map([['a.png', { size: 4, mtimeMs: a.mtimeMs }]]));
      });

      it('tells the history: the newest finished row at each place, an earlier version with its folder too', async () => {
        let s = await session();
        await finish(s, (await s.admit(planned('a.png', 'four'), NO_REFERENCES)).item);
        const b = (await s.admit(planned('b.png'), NO_REFERENCES)).item;
        await s.save(submitted(uploaded(b)));
        s = await reopen(s);
        const again = (await s.admit(planned('a.png', 'five!'), NO_REFERENCES)).item;
        expect(again.place).toBe('a-1.png');
        await finish(s, again);
        // Refused by the local check: nothing was sent, and it finished all the same.
        const c = (await s.admit(planned('c.png', 'hello'), NO_REFERENCES)).item;
        await s.save({ ...c, state: 'failed', failedAt: 'check', reason: 'image is too large' });
        const items = await s.finishedItems();
        expect(items.map((i) => [i.input, i.place, i.state, i.size, i.journal?.action])).toEqual([
          ['a.png', 'a.png', 'reported', 4, 'done'],
          ['a.png', 'a-1.png', 'reported', 5, 'done'],
          ['c.png', 'c.png', 'failed', 5, 'done'],
        ]);
      });
    });

    describe('files refused before they were planned', () => {
      /** `name` as a save of its refusal says it: failed at `at`, in the place placeFor gave it. */
      const refused = async (s: Store, name: string, at: 'sniff' | 'plan', raw?: Buffer): Promise<Item> => {
        const it: Item = {
          ...newItem(name, join(inDir, name), 3, 1),
          ...(raw ? { rawInput: raw.toString('base64') } : {}),
          state: 'failed',
          failedAt: at,
          reason: `refused at ${at}`,
        };
        const place = await s.placeFor(name, raw ? `/${raw.toString('base64')}` : name);
        await s.save({ ...it, place });
        return { ...it, place };
      };
      const told = async (s: Store) =>
        (await s.finishedItems()).map((i) => [i.input, i.place, i.state, i.reason, i.rawInput ?? null]);

      it('keeps them in the history at their places, a name that is not valid UTF-8 by its bytes', async () => {
        let s = await session();
        await refused(s, 'notes.txt', 'plan');
        // caf\xe9.png in Latin-1, and a valid file whose name prints as it does: two inputs.
        const raw = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x70, 0x6e, 0x67]);
        await refused(s, 'caf\\xe9.png', 'sniff', raw);
        await refused(s, 'caf\\xe9.png', 'sniff');
        const skipped = { ...newItem('x.md', join(inDir, 'x.md'), 1, 1), state: 'skipped' as const };
        await s.save({ ...skipped, place: await s.placeFor('x.md'), reason: 'matches no recipe rule' });
        s = await reopen(s);
        const rawText = raw.toString('base64');
        const history = [
          ['caf\\xe9.png', 'caf%5Cxe9-1.png', 'failed', 'refused at sniff', null],
          ['caf\\xe9.png', 'caf%5Cxe9.png', 'failed', 'refused at sniff', rawText],
          ['notes.txt', 'notes.txt', 'failed', 'refused at plan', null],
          ['x.md', 'x.md', 'skipped', 'matches no recipe rule', null],
        ];
        expect((await told(s)).sort()).toEqual(history);
        // Refused again in a later session: each in its place again, one entry each.
        await refused(s, 'caf\\xe9.png', 'sniff', raw);
        await refused(s, 'notes.txt', 'sniff');
        s = await reopen(s);
        history[2] = ['notes.txt', 'notes.txt', 'failed', 'refused at sniff', null];
        expect((await told(s)).sort()).toEqual(history);
        // Fixed, the file is admitted and checked as any other, in its place.
        const d = await s.admit(planned('notes.txt'), NO_REFERENCES);
        expect(d).toMatchObject({ action: 'fresh', item: { place: 'notes.txt' } });
      });

      it('never pays twice: the finished version that comes back is done, and work in flight stays', async () => {
        let s = await session();
        await finish(s, (await s.admit(planned('a.png', 'good bytes'), NO_REFERENCES)).item);
        const b = (await s.admit(planned('b.png'), NO_REFERENCES)).item;
        await s.save(submitted(uploaded(b)));
        s = await reopen(s);
        // Replaced by bytes that are refused: a place of their own, both versions in the history.
        writeFileSync(join(inDir, 'a.png'), 'garbage');
        expect((await refused(s, 'a.png', 'plan')).place).toBe('a-1.png');
        await refused(s, 'b.png', 'sniff');
        s = await reopen(s);
        expect((await told(s)).map((i) => i.slice(0, 3))).toEqual([
          ['a.png', 'a.png', 'reported'],
          ['a.png', 'a-1.png', 'failed'],
        ]);
        // b.png's generation is still collected, its input gone or not.
        expect((await s.vanishedInFlight()).map((d) => [d.item.input, d.item.state])).toEqual([
          ['b.png', 'submitted'],
        ]);
        // The good bytes come back: the earlier work, done, nothing created again.
        expect(await s.admit(planned('a.png', 'good bytes'), NO_REFERENCES)).toMatchObject({
          action: 'done',
          item: { place: 'a.png', state: 'reported' },
        });
      });
    });

    describe('same content under another name', () => {
      it('reuses a finished file of the same bytes and recipe, naming it; renamed when its input is gone', async () => {
        const s = await session();
        await finish(s, (await s.admit(planned('a.png', 'same bytes'), NO_REFERENCES)).item);
        const b = await s.admit(planned('b.png', 'same bytes'), NO_REFERENCES);
        expect(b).toMatchObject({ action: 'reuse', sameContent: { input: 'a.png', place: 'a.png' } });
        expect(b.item.place).toBe('b.png');
        expect(b.reason).toMatch(/^reused: same content as a\.png \(done .* UTC, generation gen-a\.png\)$/);
        rmSync(join(inDir, 'a.png'));
        const c = await s.admit(planned('c.png', 'same bytes'), NO_REFERENCES);
        expect(c.reason).toMatch(/^renamed from a\.png: its outputs reused/);
        // Other bytes, --redo-same-content, or outputs gone: sent.
        expect((await s.admit(planned('d.png', 'other bytes'), NO_REFERENCES)).action).toBe('fresh');
        const e = await s.admit(planned('e.png', 'same bytes'), NO_REFERENCES, { redoSameContent: true });
        expect(e.action).toBe('fresh');
      });

      it("takes a chain's steps done for the same bytes under another recipe, and sends the rest", async () => {
        const s = await session();
        /** A planned two-step chain of `name`: stylize, then animate with `motion`. */
        const chain = (name: string, motion: string): Item => {
          const item = planned(name, 'same chain bytes');
          const stylize = { ...item.steps[0]!, name: 'stylize' };
          const animate = {
            ...stylize,
            name: 'animate',
            after: ['stylize'],
            request: { type: 'video', prompt: motion, video: { start_frame: { url: '$step:stylize' } } },
          };
          return { ...item, steps: [stylize, animate] };
        };
        const a = (await s.admit(chain('a.png', 'slow pan'), NO_REFERENCES)).item;
        expect(a.steps.every((st) => typeof st.work === 'string')).toBe(true);
        mkdirSync(join(outDir, 'a.png', 'stylize'), { recursive: true });
        writeFileSync(join(outDir, 'a.png', 'stylize', 'output-0.png'), 'STILL');
        const done = {
          ...a,
          state: 'failed' as const,
          reason: "step 'animate' failed: generation failed",
          failedAt: 'wait' as const,
          steps: [
            {
              ...a.steps[0]!,
              state: 'downloaded' as const,
              requestId: 'req-s',
              generationId: 'gen-s',
              outputs: ['a.png/stylize/output-0.png'],
            },
            { ...a.steps[1]!, state: 'failed' as const, requestId: 'req-v', generationId: 'gen-v' },
          ],
        };
        await s.recordIntent({ ...done, state: 'uploaded', step: 'stylize' });
        await s.save(done);
        // The copy's animate differs: stylize is taken from a.png, animate sent.
        const b = await s.admit(chain('b.png', 'fast zoom'), NO_REFERENCES);
        expect(b).toMatchObject({ action: 'reuse', sameContent: { input: 'a.png', place: 'a.png' } });
        expect(b.sameContent?.steps?.map((st) => [st.name, st.state, st.generationId])).toEqual([
          ['stylize', 'downloaded', 'gen-s'],
        ]);
        expect(b.reason).toMatch(/^step 'stylize' reused: done for a\.png, which has the same content/);
        // Its still gone: taken to be collected again, not created.
        rmSync(join(outDir, 'a.png', 'stylize', 'output-0.png'));
        const c = await s.admit(chain('c.png', 'tilt'), NO_REFERENCES);
        expect(c.sameContent?.steps?.map((st) => [st.name, st.state])).toEqual([['stylize', 'submitted']]);
        // Other bytes, or --redo-same-content: sent whole.
        const other = { ...chain('d.png', 'tilt'), absPath: join(inDir, 'd.png') };
        writeFileSync(other.absPath, 'other bytes');
        expect((await s.admit({ ...other, size: 11 }, NO_REFERENCES)).action).toBe('fresh');
        const e = await s.admit(chain('e.png', 'tilt'), NO_REFERENCES, { redoSameContent: true });
        expect(e.action).toBe('fresh');
      });

      it('collects the generation again for a file whose twin lost its outputs: never a new create', async () => {
        const s = await session();
        await finish(s, (await s.admit(planned('a.png', 'same bytes'), NO_REFERENCES)).item);
        rmSync(join(outDir, 'a.png', 'output-0.png'));
        const b = await s.admit(planned('b.png', 'same bytes'), NO_REFERENCES);
        expect(b).toMatchObject({ action: 'resume', item: { state: 'submitted', place: 'b.png' } });
        expect(b.reason).toMatch(/^same content as a\.png: collecting its generation gen-a\.png/);
      });

      it('waits for a file of the same content in flight here, writing nothing, until it is saved finished', async () => {
        const s = await session();
        const a = (await s.admit(planned('a.png', 'same bytes'), NO_REFERENCES)).item;
        const b = await s.admit(planned('b.png', 'same bytes'), NO_REFERENCES);
        expect(b).toMatchObject({ action: 'wait', sameContent: { input: 'a.png' } });
        expect(s.boundCount()).toBe(1);
        let woken = false;
        const settled = b.settled?.().then(() => {
          woken = true;
        });
        await finish(s, a);
        await settled;
        expect(woken).toBe(true);
        const again = await s.admit(planned('b.png', 'same bytes'), NO_REFERENCES, {
          waitedOn: b.sameContent?.id,
        });
        expect(again).toMatchObject({ action: 'reuse', sameContent: { input: 'a.png' } });
      });

      it('shares the failure of the file it waited for, and never sends it on its own', async () => {
        const s = await session();
        const a = (await s.admit(planned('a.png', 'same bytes'), NO_REFERENCES)).item;
        const b = await s.admit(planned('b.png', 'same bytes'), NO_REFERENCES);
        expect(b.action).toBe('wait');
        await s.save({
          ...a,
          state: 'failed',
          failedAt: 'wait',
          reason: 'generation failed: generation_failed',
          failure: { kind: 'generation_failed', retryable: true },
        });
        const again = await s.admit(planned('b.png', 'same bytes'), NO_REFERENCES, {
          waitedOn: b.sameContent?.id,
        });
        expect(again).toMatchObject({
          action: 'done',
          item: { state: 'failed', failure: { retryable: true } },
        });
        expect(again.reason).toMatch(/^same content as a\.png, which failed: generation failed/);
      });
    });

    describe('bindings', () => {
      it("releases an input's binding once its item is saved finished, one still in flight kept", async () => {
        const s = await session();
        const a = (await s.admit(planned('a.png'), NO_REFERENCES)).item;
        const b = (await s.admit(planned('b.png'), NO_REFERENCES)).item;
        const c = (await s.admit(planned('c.png'), NO_REFERENCES)).item;
        expect(s.boundCount()).toBe(3);
        const done = await finish(s, a);
        await s.save({ ...c, state: 'failed', failedAt: 'check', reason: 'image is too large' });
        await s.save(submitted(uploaded(b)));
        expect(s.boundCount()).toBe(1);
        // Saved again once finished, it still goes to its row (the same work), and binds nothing.
        await s.save({ ...done, reason: 'again' });
        expect(s.boundCount()).toBe(1);
      });

      it('keeps a bounded number of bindings in a session that admits 5,000 files', async () => {
        const s = await session();
        const files = 5_000;
        const inFlight = 16;
        let most = 0;
        const one = async (n: number): Promise<void> => {
          const it = (await s.admit(planned(`f${n}.png`, `bytes ${n}`), NO_REFERENCES)).item;
          most = Math.max(most, s.boundCount());
          await s.save({ ...it, state: 'failed', failedAt: 'check', reason: 'image is too large' });
        };
        for (let n = 0; n < files; n += inFlight) {
          await Promise.all(Array.from({ length: Math.min(inFlight, files - n) }, (_, k) => one(n + k)));
        }
        expect(most).toBeLessThanOrEqual(inFlight);
        expect(s.boundCount()).toBe(0);
      }, 600_000);
    });

    describe('batches', () => {
      it('records each batch with its options and how it ended', async () => {
        let s = await session();
        await s.finishBatch('stopped');
        s = await reopen(s);
        const rows = await s.batches();
        expect(rows.map((b) => b.status)).toEqual(['stopped', 'running']);
        expect(rows[0]).toMatchObject({ service: SERVICE, options: { concurrency: 2 }, pid: process.pid });
        expect(rows[0]!.finishedAt).not.toBeNull();
        await s.finishBatch();
        expect((await s.batches())[1]!.status).toBe('finished');
      });
    });

    describe('shared references', () => {
      it('keeps an upload per service, name and bytes until forgotten', async () => {
        let s = await session();
        await s.saveReference('style', 'h1', 'file-style');
        expect(await s.reference('style', 'h1')).toBe('file-style');
        expect(await s.reference('style', 'h2')).toBeNull();
        expect(await s.reference('other', 'h1')).toBeNull();
        s = await reopen(s);
        expect(await s.reference('style', 'h1')).toBe('file-style');
        await s.forgetReference('style', 'h1');
        expect(await s.reference('style', 'h1')).toBeNull();
        await s.saveReference('style', 'h1', 'file-again');
        await s.close();
        const elsewhere = await session('http://other.test');
        expect(await elsewhere.reference('style', 'h1')).toBeNull();
      });
    });

    describe('the content-hash cache', () => {
      it('gives a hash back only for the file identity it was taken at', async () => {
        let s = await session();
        const path = join(inDir, 'big.mp4');
        writeFileSync(path, 'video');
        const identity = await fileIdentity(path);
        expect(await s.cachedHash(path, identity)).toBeNull();
        await s.saveHash(path, identity, 'h-video');
        s = await reopen(s);
        expect(await s.cachedHash(path, identity)).toBe('h-video');
        expect(await s.cachedHash(path, { ...identity, size: identity.size + 1 })).toBeNull();
        expect(await s.cachedHash(path, { ...identity, ctimeNs: `${identity.ctimeNs}1` })).toBeNull();
        expect(await s.cachedHash(join(inDir, 'other.mp4'), identity)).toBeNull();
      });
    });

    describe('the out dir lock', () => {
      it('is exclusive, says who holds it, and is released on close', async () => {
        const first = await factory.open(outDir);
        const second = await factory.open(outDir);
        opened.push(first, second);
        await first.acquireLock();
        await first.acquireLock(); // holding it already: nothing
        await expect(second.acquireLock()).rejects.toMatchObject({ code: 'journal_locked' });
        expect(await second.lockHolder()).toMatchObject({ pid: process.pid });
        await first.close();
        await second.acquireLock();
        await second.releaseLock();
        const third = await factory.open(outDir);
        opened.push(third);
        await third.acquireLock();
      });
    });

    describe('quota state', () => {
      it('round-trips per service and key fingerprint, the later save replacing the earlier', async () => {
        let s = await session();
        const key = keyFingerprint('sk-test-secret');
        expect(key).not.toContain('sk-test-secret');
        expect(keyFingerprint('sk-test-secret')).toBe(key);
        expect(keyFingerprint('sk-other')).not.toBe(key);
        expect(await s.quotaState(SERVICE, key)).toBeNull();
        const state = {
          jobCeiling: 4,
          requestLimit: 60,
          windowMs: 60_000,
          blockedUntil: 1_763_772_000_000,
          recentRequests: [1_763_771_990_000, 1_763_771_995_500],
        };
        await s.saveQuotaState(SERVICE, key, state);
        s = await reopen(s);
        const back = await s.quotaState(SERVICE, key);
        expect(back).toMatchObject(state);
        expect(back!.updatedAt).toBeGreaterThan(0);
        expect(await s.quotaState(SERVICE, keyFingerprint('sk-other'))).toBeNull();
        expect(await s.quotaState('http://other.test', key)).toBeNull();
        await s.saveQuotaState(SERVICE, key, { ...state, jobCeiling: null, recentRequests: [] });
        expect(await s.quotaState(SERVICE, key)).toMatchObject({ jobCeiling: null, recentRequests: [] });
      });
    });

    describe('job durations', () => {
      it('keeps the latest samples per service and kind, oldest first, across a reopen', async () => {
        let s = await session();
        expect(await s.jobDurations(SERVICE)).toEqual(new Map());
        const kind = 'video|ray-3.2|720p|5s';
        for (let n = 0; n < JOB_DURATIONS_KEPT + 5; n++) {
          await s.recordJobDuration(SERVICE, kind, { runningAtMs: n, doneByMs: 5_000 + n });
        }
        await s.recordJobDuration(SERVICE, 'image|||', { runningAtMs: 0, doneByMs: 1_100 });
        await s.recordJobDuration('http://other.test', kind, { runningAtMs: 0, doneByMs: 9_000 });
        s = await reopen(s);
        const back = await s.jobDurations(SERVICE);
        expect([...back.keys()].sort()).toEqual(['image|||', kind]);
        const samples = back.get(kind)!;
        expect(samples).toHaveLength(JOB_DURATIONS_KEPT);
        expect(samples[0]).toEqual({ runningAtMs: 5, doneByMs: 5_005 });
        expect(samples.at(-1)).toEqual({
          runningAtMs: JOB_DURATIONS_KEPT + 4,
          doneByMs: 5_000 + JOB_DURATIONS_KEPT + 4,
        });
        expect(back.get('image|||')).toEqual([{ runningAtMs: 0, doneByMs: 1_100 }]);
        expect((await s.jobDurations('http://other.test')).get(kind)).toEqual([
          { runningAtMs: 0, doneByMs: 9_000 },
        ]);
      });

      it('seeds a duration model that expects what the recorded jobs showed', async () => {
        let s = await session();
        const kind = 'image|||';
        const learned = new RecentJobDurations({
          onRecord: (k, sample) => void s.recordJobDuration(SERVICE, k, sample),
        });
        learned.record(kind, { runningAtMs: 1_000, doneByMs: 2_000 });
        learned.record(kind, { runningAtMs: 0, doneByMs: 1_600 });
        learned.record(kind, { runningAtMs: 0, doneByMs: 1_800 });
        s = await reopen(s);
        const seeded = new RecentJobDurations({ seed: await s.jobDurations(SERVICE) });
        expect(seeded.expectedMs(kind)).toBe(learned.expectedMs(kind));
        expect(seeded.expectedMs(kind)).toBe(1_300); // halfway: running at 1000, ended by 1600
        expect(seeded.expectedMs('video|||')).toBeNull();
      });
    });

    describe('closing', () => {
      it('refuses calls once closed (close again: nothing)', async () => {
        const s = await session();
        await s.close();
        await s.close();
        await expect(s.batches()).rejects.toThrow();
        await expect(s.save(planned('a.png'))).rejects.toThrow();
      });
    });
  });
}
