/** The dashboard flag of the commands that run for a while (run, watch, worker). */
import { Option } from 'commander';
import { DASHBOARD_DEFAULT_HOST, dashboardArg } from '../dashboard-arg.ts';
import { FlagGroup } from './group.ts';

/** --dashboard. */
export const DASHBOARD = new FlagGroup('Dashboard flags:', [
  () =>
    new Option(
      '--dashboard <[host:]port>',
      `serve a live dashboard in a browser on this port while the command runs (host default ${DASHBOARD_DEFAULT_HOST}; 0 picks a free port); the address and the token its actions need are printed on stderr`,
    ).argParser(dashboardArg),
]);
