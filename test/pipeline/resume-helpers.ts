/**
 * Helpers of the resume, signal and watch-CLI tests: `genpipe` as a real child process whose `--json`
 * events are read as they come, a proxy between the child and the emulator that can slow or stall
 * uploads and downloads and hold create answers (so a test knows the child is mid-upload, mid-download
 * or mid-create when it kills it), and checks against the emulator's admin view and storage.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { request as undiciRequest } from 'undici';
import { call } from '../helpers/emulator.ts';
import { childPidIn, underNonReapingParent, verboseArgs } from '../helpers/processes.ts';
import { BIN, cleanEnv, readJson } from './run-fixtures.ts';

// ---- the child ---------------------------------------------------------------------------------

/** One `--json` event of the child (loosely typed). */
export interface ChildEvent {
  type: string;
  input?: string;
  state?: string;
  stage?: string | null;
  reason?: string | null;
  [k: string]: unknown;
}

/** A running `genpipe` child. */
export interface GenpipeChild {
  /** The process spawned: genpipe itself, or its non-reaping parent (see spawnGenpipe). */
  proc: ChildProcess;
  /** genpipe's own pid. */
  pid(): Promise<number>;
  events: ChildEvent[];
  stdout(): string;
  stderr(): string;
  /** Resolves once `pred` holds for the events so far (checked on every new event and every 20 ms). */
  until(pred: (events: ChildEvent[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Resolves when the child exited; `at` is the time of the exit (ms since the epoch). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

const children = new Set<ChildProcess>();

/** Kills every child still running (afterAll). */
export function killChildren(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/**
 * Starts `node bin/genpipe.js <args>` with `env`, reading its stdout as JSON lines where they parse.
 * With `nonReapingParent`, genpipe runs under a parent that never reaps it (test/helpers/processes.ts):
 * `proc` and `exited` are that parent's, and genpipe, once killed, stays a zombie.
 */
export function spawnGenpipe(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { nonReapingParent?: boolean } = {},
): GenpipeChild {
  const argv = [process.execPath, BIN, ...verboseArgs(args)];
  const [command, rest] = opts.nonReapingParent ? underNonReapingParent(argv) : [argv[0]!, argv.slice(1)];
  const proc = spawn(command, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(proc);
  const events: ChildEvent[] = [];
  let out = '';
  let err = '';
  let buf = '';
  proc.stdout?.on('data', (d: Buffer) => {
    out += String(d);
    buf += String(d);
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        events.push(JSON.parse(line) as ChildEvent);
      } catch {
        // a plain line
      }
      nl = buf.indexOf('\n');
    }
  });
  proc.stderr?.on('data', (d: Buffer) => {
    err += String(d);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((res) =>
    proc.once('exit', (code, signal) => {
      children.delete(proc);
      // Said where a failed exit-code assertion shows it (its message is the child's stderr).
      if (signal !== null) err += `\n[the test saw the process end by ${signal}]`;
      res({ code, signal, at: Date.now() });
    }),
  );
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const child: GenpipeChild = {
    proc,
    pid: async () => {
      if (!opts.nonReapingParent) return proc.pid!;
      await child.until(() => childPidIn(out) !== null, 'the child line of its parent');
      return childPidIn(out)!;
    },
    events,
    stdout: () => out,
    stderr: () => err,
    exited,
    async until(pred, what, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        if (pred(events)) return;
        if (done) throw new Error(`genpipe exited before ${what}\nstdout:\n${out}\nstderr:\n${err}`);
        if (Date.now() > end) throw new Error(`no ${what} within ${timeoutMs} ms\nstderr:\n${err}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
  return child;
}

/** Runs `genpipe <args>` to its end. */
export async function runToEnd(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; child: GenpipeChild }> {
  const child = spawnGenpipe(args, env);
  const { code } = await child.exited;
  return { code, child };
}

/** The last state each input reached in an event stream. */
export function lastStates(events: readonly ChildEvent[]): Map<string, string> {
  const states = new Map<string, string>();
  for (const e of events) if (e.type === 'item_state' && e.input && e.state) states.set(e.input, e.state);
  return states;
}

const AT_OR_PAST_SUBMITTED = new Set([
  'submitted',
  'completed',
  'downloaded',
  'reported',
  'failed',
  'skipped',
]);

/**
 * True when no create can be on its way: every input seen has reached `submitted` (or later, or a final
 * state) except those in `except`. A kill at such a moment leaves no create whose outcome is unknown.
 */
export function noCreateInFlight(events: readonly ChildEvent[], except: readonly string[] = []): boolean {
  const seen = new Set(events.filter((e) => e.type === 'item_discovered').map((e) => e.input as string));
  const states = lastStates(events);
  for (const input of seen) {
    if (except.includes(input)) continue;
    if (!AT_OR_PAST_SUBMITTED.has(states.get(input) ?? '')) return false;
  }
  return seen.size > 0;
}

/** The environment of a child talking to `url` with `key`. */
export function envFor(url: string, key: string): NodeJS.ProcessEnv {
  return cleanEnv({ GENPIPE_API_KEY: key, GENPIPE_BASE_URL: url });
}

// ---- the proxy ---------------------------------------------------------------------------------

/** One request the proxy forwarded. */
export interface ProxyFlow {
  kind: 'upload' | 'download' | 'create' | 'other';
  method: string;
  path: string;
  /** Bytes forwarded so far (request body for uploads, response body for downloads). */
  bytes: number;
  /** Content-Length, when given. */
  total: number | null;
  /** The whole body went through. */
  done: boolean;
  /** X-Request-Id of the request. */
  requestId: string | null;
  /** A create whose answer the proxy holds back (the generation exists; the child never hears of it). */
  held: boolean;
}

/** A proxy between the child and the emulator (see the module comment). */
export interface SlowProxy {
  url: string;
  flows: ProxyFlow[];
  /** Bytes per 50 ms of upload bodies (POST /v1/files, PUT /_storage/uploads), or null for full speed. */
  uploadRate: number | null;
  /** Bytes per 50 ms of output downloads (GET /_storage/outputs), or null for full speed. */
  downloadRate: number | null;
  /**
   * Each upload body forwards at most this many bytes, then stalls until the field is set back to null
   * (or raised): the child is mid-upload for as long as the test needs, whatever the machine's speed.
   */
  uploadHoldAfter: number | null;
  /** The same for output downloads. */
  downloadHoldAfter: number | null;
  /** Hold back the answers of POST /v1/generations (the create is carried out). */
  holdCreates: boolean;
  /**
   * Cuts every upload and download still under way, on both sides. Call it right after killing the
   * child: the kernel's socket buffers would otherwise still deliver the rest of a body the child had
   * already written (a small file fits in them), so the cut stands in for a file bigger than they are.
   */
  cutInProgress(): void;
  close(): Promise<void>;
}

/** Passes a body on at `rate()` bytes per 50 ms (null: full speed), stalling after `holdAfter()` bytes. */
class Throttle extends Transform {
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;
  constructor(
    private readonly rate: () => number | null,
    private readonly holdAfter: () => number | null,
    private readonly count: (n: number) => void,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let off = 0;
    const next = () => {
      this.timer = null;
      if (this.destroyed) return;
      if (off >= chunk.length) return done();
      const cap = this.holdAfter();
      const room = cap === null ? chunk.length - off : cap - this.sent;
      if (room <= 0) {
        // Held: look again soon whether the test has let it go.
        this.timer = setTimeout(next, 20);
        return;
      }
      const rate = this.rate();
      const n = Math.min(chunk.length - off, room, rate ?? Number.POSITIVE_INFINITY);
      const piece = chunk.subarray(off, off + n);
      off += n;
      this.sent += n;
      this.push(piece);
      this.count(n);
      if (rate === null) return next();
      this.timer = setTimeout(next, 50);
    };
    next();
  }
  override _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    if (this.timer) clearTimeout(this.timer);
    cb(err);
  }
}

function kindOf(req: IncomingMessage): ProxyFlow['kind'] {
  const path = req.url ?? '';
  if (req.method === 'PUT' && path.startsWith('/_storage/uploads/')) return 'upload';
  if (req.method === 'POST' && path.startsWith('/v1/files') && !path.includes('/complete')) {
    return String(req.headers['content-type'] ?? '').startsWith('multipart/') ? 'upload' : 'other';
  }
  if (req.method === 'GET' && path.startsWith('/_storage/outputs/')) return 'download';
  if (req.method === 'POST' && path.startsWith('/v1/generations')) return 'create';
  return 'other';
}

/**
 * Starts a proxy to the emulator at `target`. The child's Host header is passed on, so the storage
 * URLs the emulator signs point at the proxy too (and their uploads and downloads go through it).
 */
export async function startSlowProxy(target: string): Promise<SlowProxy> {
  const to = new URL(target);
  const proxy: SlowProxy = {
    url: '',
    flows: [],
    uploadRate: null,
    downloadRate: null,
    uploadHoldAfter: null,
    downloadHoldAfter: null,
    holdCreates: false,
    cutInProgress: () => {
      for (const cut of cuts) cut();
    },
    close: async () => undefined,
  };
  const cuts = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const kind = kindOf(req);
    const length = Number(req.headers['content-length']);
    const flow: ProxyFlow = {
      kind,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      bytes: 0,
      total: kind === 'upload' && Number.isFinite(length) ? length : null,
      done: false,
      requestId: (req.headers['x-request-id'] as string | undefined) ?? null,
      held: false,
    };
    proxy.flows.push(flow);
    const cut = () => {
      req.unpipe();
      up.destroy();
      res.destroy();
    };
    if (kind === 'upload' || kind === 'download') {
      cuts.add(cut);
      res.on('close', () => cuts.delete(cut));
    }
    const up = httpRequest(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent: false,
      },
      (upRes) => {
        if (kind === 'create' && proxy.holdCreates) {
          flow.held = true;
          upRes.resume(); // the answer is read and dropped: the child never gets it
          return;
        }
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        if (kind === 'download') {
          const total = Number(upRes.headers['content-length']);
          flow.total = Number.isFinite(total) ? total : null;
          const slow = new Throttle(
            () => proxy.downloadRate,
            () => proxy.downloadHoldAfter,
            (n) => {
              flow.bytes += n;
            },
          );
          upRes.pipe(slow).pipe(res);
          slow.on('end', () => {
            flow.done = true;
          });
          res.on('close', () => slow.destroy());
        } else {
          upRes.pipe(res);
        }
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.on('error', () => up.destroy());
    if (kind === 'upload') {
      const slow = new Throttle(
        () => proxy.uploadRate,
        () => proxy.uploadHoldAfter,
        (n) => {
          flow.bytes += n;
        },
      );
      slow.on('end', () => {
        flow.done = true;
      });
      req.pipe(slow).pipe(up);
      req.on('close', () => {
        if (!req.complete) slow.destroy();
      });
    } else {
      req.pipe(up);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return proxy;
}

// ---- checks against the emulator and the out dir -----------------------------------------------

/** A generation as the admin view lists it. */
export interface AdminGen {
  id: string;
  client_id: string;
  request_id: string;
  state: string;
  /** The generation's type (`image`, `image_edit`, `video`, …). */
  type: string;
}

/** The generations of one client, oldest first. */
export async function generationsOf(emu: { url: string }, clientId: string): Promise<AdminGen[]> {
  const r = await call(emu, 'GET', '/_emulator/generations', { key: null });
  return (r.body.data as AdminGen[]).filter((g) => g.client_id === clientId);
}

/** Every file under `dir` (relative paths, '/' separated), dot-folders included. */
export async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path);
      else out.push(path);
    }
  };
  await walk('');
  return out.sort();
}

/**
 * Checks every succeeded item of `<out>/report.json` against the emulator: each output file has
 * exactly the size the emulator serves for it. Returns the number of outputs compared.
 */
export async function expectOutputsComplete(
  emu: { url: string },
  key: string,
  outDir: string,
): Promise<{ compared: number; problems: string[] }> {
  const report = await readJson(join(outDir, 'report.json'));
  const problems: string[] = [];
  let compared = 0;
  for (const item of report.items as Array<{
    input: string;
    status: string;
    generation_id: string;
    outputs: string[];
  }>) {
    if (item.status !== 'succeeded') continue;
    const gen = await call(emu, 'GET', `/v1/generations/${item.generation_id}`, { key });
    const urls = (gen.body.output as Array<{ url: string }>).map((o) => o.url);
    if (urls.length !== item.outputs.length) {
      problems.push(`${item.input}: ${item.outputs.length} outputs on disk, ${urls.length} at the service`);
      continue;
    }
    for (const [i, url] of urls.entries()) {
      const head = await undiciRequest(url, { method: 'HEAD' });
      await head.body.dump();
      const served = Number(head.headers['content-length']);
      const local = (await stat(join(outDir, item.outputs[i]!))).size;
      if (local !== served) problems.push(`${item.outputs[i]}: ${local} bytes on disk, ${served} served`);
      compared++;
    }
  }
  return { compared, problems };
}
