/**
 * A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands
 * on fd 3, answers and events on fd 4, each a JSON message ended by a NUL byte) — no library, no port.
 * Enough for the benches and tests: open a page in a fresh tab, wait for its load, evaluate an
 * expression, take a screenshot.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

export const CHROMIUM = process.env.GENPIPE_CHROMIUM ?? '/usr/bin/chromium';

/** Throws, saying how to get one, when there is no Chromium to run at CHROMIUM. */
export function needChromium(): void {
  try {
    accessSync(CHROMIUM, constants.X_OK);
  } catch {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium), or set GENPIPE_CHROMIUM to a Chromium binary`,
    );
  }
}

interface Message {
  id?: number;
  method?: string;
  sessionId?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
}

export class Chromium {
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { ok: (r: Record<string, unknown>) => void; fail: (e: Error) => void }
  >();
  private readonly listeners: ((m: Message) => void)[] = [];
  private buf = Buffer.alloc(0);

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const out = child.stdio[4] as Readable;
    out.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      for (let end = this.buf.indexOf(0); end >= 0; end = this.buf.indexOf(0)) {
        const msg = JSON.parse(this.buf.subarray(0, end).toString('utf8')) as Message;
        this.buf = this.buf.subarray(end + 1);
        this.dispatch(msg);
      }
    });
  }

  /** Starts a headless Chromium with a throwaway profile. */
  static start(args: string[] = []): Chromium {
    needChromium();
    const profile = mkdtempSync(join(tmpdir(), 'genpipe-chromium-'));
    const child = spawn(
      CHROMIUM,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--remote-debugging-pipe',
        `--user-data-dir=${profile}`,
        '--no-first-run',
        '--hide-scrollbars',
        ...args,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
    );
    return new Chromium(child, profile);
  }

  private dispatch(msg: Message): void {
    if (msg.id !== undefined) {
      const w = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (msg.error) w?.fail(new Error(msg.error.message));
      else w?.ok(msg.result ?? {});
      return;
    }
    for (const l of [...this.listeners]) l(msg);
  }

  /** Sends a command (to a tab's session when given) and resolves with its result. */
  send(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> {
    const id = ++this.nextId;
    const msg = JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) });
    return new Promise((ok, fail) => {
      this.waiting.set(id, { ok, fail });
      (this.child.stdio[3] as Writable).write(`${msg}\0`);
    });
  }

  /** The next event `method` of `sessionId`, or a rejection after `timeoutMs`. */
  event(method: string, sessionId: string, timeoutMs: number): Promise<Message> {
    return new Promise((ok, fail) => {
      const timer = setTimeout(() => {
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        fail(new Error(`no ${method} in ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (m: Message) => {
        if (m.method !== method || m.sessionId !== sessionId) return;
        clearTimeout(timer);
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        ok(m);
      };
      this.listeners.push(listener);
    });
  }

  /** Opens `url` in a new tab of `width`×`height` and resolves once it fired its load event. */
  async open(url: string, opts: { width?: number; height?: number; timeoutMs?: number } = {}): Promise<Tab> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as {
      targetId: string;
    };
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    await this.send('Page.enable', {}, sessionId);
    await this.send(
      'Emulation.setDeviceMetricsOverride',
      { width: opts.width ?? 1280, height: opts.height ?? 900, deviceScaleFactor: 1, mobile: false },
      sessionId,
    );
    const loaded = this.event('Page.loadEventFired', sessionId, opts.timeoutMs ?? 120_000);
    await this.send('Page.navigate', { url }, sessionId);
    await loaded;
    return new Tab(this, targetId, sessionId);
  }

  async close(): Promise<void> {
    await this.send('Browser.close').catch(() => undefined);
    await new Promise<void>((done) => {
      if (this.child.exitCode !== null) return done();
      const t = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      this.child.once('exit', () => {
        clearTimeout(t);
        done();
      });
    });
    rmSync(this.profile, { recursive: true, force: true });
  }
}

export class Tab {
  constructor(
    private readonly browser: Chromium,
    private readonly targetId: string,
    readonly sessionId: string,
  ) {}

  /** The value of a JavaScript expression in the page (awaited when a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.browser.send(
      'Runtime.evaluate',
      { expression, returnByValue: true, awaitPromise: true },
      this.sessionId,
    )) as { result: { value: T }; exceptionDetails?: { text: string } };
    if (r.exceptionDetails) throw new Error(`evaluate: ${r.exceptionDetails.text}`);
    return r.result.value;
  }

  /** A PNG of the viewport. */
  async screenshot(): Promise<Buffer> {
    const r = (await this.browser.send('Page.captureScreenshot', { format: 'png' }, this.sessionId)) as {
      data: string;
    };
    return Buffer.from(r.data, 'base64');
  }

  close(): Promise<unknown> {
    return this.browser.send('Target.closeTarget', { targetId: this.targetId });
  }
}
