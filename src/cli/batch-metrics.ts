/**
 * `--metrics-port` / `--metrics-host` of `run` and `watch`: the batch's metrics (createMetrics) served
 * while it runs (startMetricsServer), started before the service is connected so that a port that
 * cannot be listened on is refused (exit 2) before anything is sent.
 */
import {
  createMetrics,
  type GenpipeMetrics,
  type MetricsServer,
  MetricsServerError,
  startMetricsServer,
} from '../pipeline/index.ts';
import { type BatchFlags, METRICS_DEFAULT_HOST } from './batch-options.ts';
import { UsageError } from './usage-error.ts';

/** The metrics of a batch and the server showing them. */
export interface BatchMetrics {
  readonly metrics: GenpipeMetrics;
  readonly server: MetricsServer;
}

/**
 * Starts the metrics server when `--metrics-port` is given (null otherwise) and prints where, once.
 *
 * @param print - prints a line on stderr (the command's own way)
 * @throws UsageError when it cannot listen there (port in use, permission, unknown address)
 */
export async function startBatchMetrics(
  flags: Pick<BatchFlags, 'metricsPort' | 'metricsHost'>,
  command: string,
  print: (line: string) => void,
): Promise<BatchMetrics | null> {
  if (flags.metricsPort === undefined) return null;
  const metrics = createMetrics();
  try {
    const server = await startMetricsServer({
      host: flags.metricsHost ?? METRICS_DEFAULT_HOST,
      port: flags.metricsPort,
      registry: metrics.registry,
      health: metrics.health,
    });
    print(`genpipe: metrics on ${server.url}/metrics`);
    return { metrics, server };
  } catch (err) {
    if (err instanceof MetricsServerError) {
      throw new UsageError([`--metrics-port ${err.message}`, `Run 'genpipe ${command} --help' for usage.`]);
    }
    throw err;
  }
}
