/** The metrics flags of the commands that run for a while (run, watch, worker), and their one check. */
import { Option } from 'commander';
import { UsageError } from '../usage-error.ts';
import { FlagGroup } from './group.ts';
import { portArg } from './parsers.ts';

/** Where the metrics server listens unless --metrics-host says otherwise. */
export const METRICS_DEFAULT_HOST = '127.0.0.1';

/** --metrics-port, --metrics-host. */
export const METRICS = new FlagGroup('Metrics flags:', [
  () =>
    new Option(
      '--metrics-port <port>',
      'serve Prometheus metrics (GET /metrics) and a health check (GET /healthz) on this port while the command runs; 0 picks a free port; the address is printed on stderr',
    ).argParser(portArg),
  () =>
    new Option(
      '--metrics-host <host>',
      `the address the metrics server listens on (default ${METRICS_DEFAULT_HOST}; 0.0.0.0 exposes it to the network)`,
    ),
]);

/** --metrics-host without --metrics-port: a usage error of the command `helpOf` names (run, watch, worker). */
export function checkMetricsHost(
  flags: { metricsHost?: string; metricsPort?: number },
  helpOf: { helpOf: string },
): void {
  if (flags.metricsHost !== undefined && flags.metricsPort === undefined) {
    throw new UsageError('--metrics-host needs --metrics-port (the port to serve the metrics on)', helpOf);
  }
}
