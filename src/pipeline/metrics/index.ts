/**
 * Prometheus metrics and a health check for a long-running genpipe process (run, watch, a worker):
 * createMetrics (a registry of its own, fed by a batch's events and its client's hooks) and
 * startMetricsServer (GET /metrics, GET /healthz).
 */
export { BatchHealth, type BatchPhase, type HealthBody } from './batch-health.ts';
export {
  createMetrics,
  type GenpipeMetrics,
  POLL_LAG_BUCKETS,
  RATE_LIMITED_KINDS,
  type RateLimitedKind,
  rateLimitedKind,
} from './create-metrics.ts';
export {
  type MetricsServer,
  MetricsServerError,
  type MetricsServerOptions,
  startMetricsServer,
} from './metrics-server.ts';
