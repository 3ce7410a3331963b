/**
 * The live dashboard of a batch (`--dashboard` of run and watch, `genpipe dashboard <out-dir>`): its
 * model (the rows, kept from the batch's events or read from a journal), its server and its page.
 */
export {
  countRows,
  type DashboardBatch,
  DashboardModel,
  type DashboardRow,
  type DashboardSnapshot,
  type DashboardStatus,
  type DashboardWorker,
  HISTORY_FILES,
  statusOf,
  WAITING_SHOWN,
  WORKER_FILES_SHOWN,
} from './dashboard-model.ts';
export {
  type DashboardActions,
  type DashboardServer,
  DashboardServerError,
  type DashboardServerOptions,
  isLoopback,
  startDashboardServer,
} from './dashboard-server.ts';
export { type DashboardQuota, QuotaView } from './quota-view.ts';
