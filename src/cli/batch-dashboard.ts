/**
 * `--dashboard [host:]port` of `run` and `watch`: the batch's live dashboard (pipeline/dashboard),
 * served by this process while the batch runs, fed by the batch's events. Started with the metrics
 * server, before the service is connected, so that an address that cannot be listened on is refused
 * (exit 2) before anything is sent. Its address and the token its actions need are printed on stderr
 * (the token never in the log file).
 */
import type { ClientHooks } from '../client/index.ts';
import {
  type DashboardActions,
  type DashboardBatch,
  DashboardModel,
  type DashboardServer,
  DashboardServerError,
  isLoopback,
  QuotaView,
  startDashboardServer,
} from '../pipeline/dashboard/index.ts';
import type { DashboardAddress } from './dashboard-arg.ts';
import { UsageError } from './usage-error.ts';

/** A batch's dashboard: its model (a sink of the batch's events) and its server. */
export interface BatchDashboard {
  readonly model: DashboardModel;
  readonly server: DashboardServer;
  /** The client's quota (watch it once the client is made; its hooks count the 429s). */
  readonly quota: QuotaView;
}

/** What the dashboard serves and does. */
export interface BatchDashboardOptions {
  address: DashboardAddress | undefined;
  command: 'run' | 'watch' | 'worker';
  /** Where the inputs are (their thumbnails); null: none (a worker's, of many out dirs). */
  inputDir: string | null;
  /** Where thumbnails are kept; null: none. */
  outDir: string | null;
  title: string;
  actions: DashboardActions;
  heldBack?: () => readonly { input: string; reason: string; since: number }[];
  /** A watch's files settling and waiting for the intake (DashboardBatch.waiting). */
  waiting?: () => NonNullable<DashboardBatch['waiting']>;
  /** Where an input is now when it left its place (a watch's --on-done move); null: at its place. */
  inputPath?: (input: string) => string | null;
  /** The files found and waiting for the intake (a watch's queue). */
  intakeWaiting?: () => number;
  /** Prints a line on stderr (the command's own way). */
  print: (line: string) => void;
  /** Writes a line to the log file only. */
  record: (line: string) => void;
}

/** The note of a page served on every interface: at which address it was printed. */
export function everyInterface(host: string): string {
  return host === '0.0.0.0' || host === '::'
    ? `; it listens on every interface (${host}): the address above is this machine's first off loopback`
    : '';
}

/**
 * Starts the dashboard when `--dashboard` is given (null otherwise) and prints where, and its token.
 *
 * @throws UsageError when it cannot listen there
 */
export async function startBatchDashboard(opts: BatchDashboardOptions): Promise<BatchDashboard | null> {
  if (opts.address === undefined) return null;
  const model = new DashboardModel(opts.command);
  const quota = new QuotaView();
  const { heldBack, intakeWaiting, waiting } = opts;
  try {
    const server = await startDashboardServer({
      ...opts.address,
      model,
      inputDir: opts.outDir === null ? null : opts.inputDir,
      ...(opts.inputPath ? { inputPath: opts.inputPath } : {}),
      outDir: opts.outDir ?? '',
      title: opts.title,
      actions: opts.actions,
      refresh: () => {
        model.batch.quota = quota.read();
        if (intakeWaiting) model.batch.intakeWaiting = intakeWaiting();
        if (heldBack)
          model.batch.heldBack = heldBack().map((h) => ({
            input: h.input,
            reason: h.reason,
            since: h.since,
          }));
        if (waiting) model.batch.waiting = waiting();
      },
    });
    const where = `genpipe: dashboard on ${server.url}`;
    const open = isLoopback(opts.address.host)
      ? ''
      : ` (off loopback the page needs it too: open ${server.url}#token=… or give it on the page${everyInterface(opts.address.host)})`;
    opts.print(`${where} (actions need the token ${server.token}${open})`);
    opts.record(where);
    return { model, server, quota };
  } catch (err) {
    if (err instanceof DashboardServerError) {
      throw new UsageError([`--dashboard ${err.message}`, `Run 'genpipe ${opts.command} --help' for usage.`]);
    }
    throw err;
  }
}

/** The metrics' client hooks and the dashboard's, each called (undefined: neither is served). */
export function bothHooks(
  metrics: Pick<ClientHooks, 'onRetry' | 'onTransfer'> | undefined,
  dashboard: Pick<ClientHooks, 'onRetry'> | undefined,
): Omit<ClientHooks, 'log'> | undefined {
  if (!metrics || !dashboard) return metrics ?? dashboard;
  return {
    ...metrics,
    onRetry: (info) => {
      dashboard.onRetry?.(info);
      return metrics.onRetry?.(info);
    },
  };
}
