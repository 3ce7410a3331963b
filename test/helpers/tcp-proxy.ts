/**
 * A TCP proxy on loopback in front of a server (a test's PostgreSQL), which the test can cut — every
 * connection ended, new ones refused, as when the database's machine is unreachable — and restore on
 * the same port.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Ends every connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A proxy from a free port of 127.0.0.1 to `target`. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const make = (): Server =>
    createServer((client) => {
      const upstream = createConnection(target);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  const listen = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : port);
      });
    });
  let server: Server | null = make();
  const port = await listen(server, 0);
  const cut = async () => {
    const s = server;
    server = null;
    const closed = s ? new Promise<void>((r) => s.close(() => r())) : Promise.resolve();
    for (const sock of sockets) sock.destroy();
    await closed;
  };
  return {
    port,
    cut,
    async restore() {
      if (server) return;
      server = make();
      await listen(server, port);
    },
    close: cut,
  };
}
