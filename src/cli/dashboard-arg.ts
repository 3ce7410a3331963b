/** `--dashboard [host:]port`'s value (light: loaded for --help; the server is batch-dashboard.ts). */
import { InvalidArgumentError } from 'commander';

/** Where the dashboard listens unless the flag names a host. */
export const DASHBOARD_DEFAULT_HOST = '127.0.0.1';

/** `--dashboard`'s value: where to listen. */
export interface DashboardAddress {
  host: string;
  port: number;
}

/**
 * Parses `[host:]port` for commander (`8080`, `0`, `0.0.0.0:8080`, `[::1]:8080`); port 0 picks a free one.
 *
 * @example dashboardArg('127.0.0.1:0') // → { host: '127.0.0.1', port: 0 }
 */
export function dashboardArg(value: string): DashboardAddress {
  const m = /^(?:\[([^\]]+)\]:|([^:[\]]+):)?(\d+)$/.exec(value.trim());
  const port = Number(m?.[3]);
  if (!m || port > 65_535) {
    throw new InvalidArgumentError('expected [host:]port, a port from 0 to 65535 (0: a free port)');
  }
  return { host: m[1] ?? m[2] ?? DASHBOARD_DEFAULT_HOST, port };
}
