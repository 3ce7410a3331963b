/**
 * genpipe's exit codes, in one table: 0 success, 1 a failed call or batch item, 2 usage or
 * configuration errors, 3 a batch the service stopped early (authentication, suspended client,
 * insufficient balance, service unreachable, journal unwritable), 130 / 143 interrupted by SIGINT /
 * SIGTERM (128 + the signal's number).
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  stoppedEarly: 3,
  interrupted: 130,
  terminated: 143,
} as const;

/** The exit code of a process that ended on a signal. */
export const SIGNAL_EXIT: Readonly<Record<'SIGINT' | 'SIGTERM', number>> = {
  SIGINT: EXIT.interrupted,
  SIGTERM: EXIT.terminated,
};

/**
 * `code`, with an interruption told apart by the signal that caused it (130 for SIGINT, 143 for
 * SIGTERM); without a signal an interruption stays 130.
 *
 * @example signalExit(EXIT.interrupted, 'SIGTERM') // 143
 */
export function signalExit(code: number, received: 'SIGINT' | 'SIGTERM' | null): number {
  return code === EXIT.interrupted && received ? SIGNAL_EXIT[received] : code;
}

/** One of genpipe's exit codes. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** What each exit code a command can end with means for it. */
export type ExitMeanings = Readonly<Partial<Record<ExitCode, string>>>;

const USAGE =
  'a usage error: an unknown flag or command, a bad flag value, a missing argument; nothing was done';
const SIGNALS = 'interrupted by SIGINT (Ctrl-C) / SIGTERM';

/** The commands that make one call of the service and print its answer. */
const CLIENT_CALL: ExitMeanings = {
  [EXIT.ok]: 'success',
  [EXIT.failed]:
    "a failed call: an error answer (the message carries the detail, the HTTP status and the request id), a request the service's rules refuse (checked locally, nothing sent), or the service unreachable",
  [EXIT.usage]: `${USAGE}; also no API key or base URL`,
  [EXIT.interrupted]: SIGNALS,
};

/** The commands that may wait for a file or a generation, and write files. */
const CLIENT_WAIT: ExitMeanings = {
  ...CLIENT_CALL,
  [EXIT.failed]: `${CLIENT_CALL[EXIT.failed]}; a local file the local check refuses (nothing uploaded), a file or generation that ended failed, a wait past --timeout, or a create whose answer was lost (the job may exist: its request id is printed; do not simply run the command again)`,
  [EXIT.usage]: `${CLIENT_CALL[EXIT.usage]}, or an --out dir genpipe cannot write in (checked before anything is sent)`,
  [EXIT.interrupted]: `${SIGNALS}: waits and transfers stop, no partial file is left under its final name; a generation already created goes on at the service`,
};

/** A group of commands (`files`, `generations`, `legacy`). */
const GROUP: ExitMeanings = {
  [EXIT.ok]: 'the help was printed (`--help`, or `help <command>`)',
  [EXIT.usage]: 'no command of the group named, or an unknown one',
};

const STOPPED_EARLY =
  'the batch stopped early: authentication (401), suspended or deactivated client (403), insufficient balance (402), the service unreachable after the client retries, a journal or out dir that can no longer be written; the files it did not finish are listed as unprocessed';

const RUN: ExitMeanings = {
  [EXIT.ok]: 'nothing failed (with --dry-run: no file would fail)',
  [EXIT.failed]:
    'some file failed, or with a store was left to another process that took it up meanwhile (with --dry-run: some file would fail)',
  [EXIT.usage]: `${USAGE}; also a recipe error, an out dir genpipe cannot write in, or the journal refused (network filesystem, another runner on the out dir)`,
  [EXIT.stoppedEarly]: STOPPED_EARLY,
  [EXIT.interrupted]: `${SIGNALS}: the batch winds down, writes its reports and the journal keeps what is done`,
};

/**
 * What each exit code means for each command, by its words after `genpipe` (`files upload`); the
 * table of its page in docs/commands (scripts/command-pages.ts, which fails for a command missing here).
 */
export const COMMAND_EXITS: Readonly<Record<string, ExitMeanings>> = {
  serve: {
    [EXIT.ok]: 'stopped by SIGINT or SIGTERM (its normal end)',
    [EXIT.failed]: 'it could not start (the port taken, for one)',
    [EXIT.usage]: `${USAGE}; also a bad config file, or a --data-dir genpipe cannot write in`,
  },
  run: RUN,
  watch: {
    [EXIT.ok]: 'stopped by SIGINT or SIGTERM, its normal end (failed files are in the report)',
    [EXIT.failed]: 'with --dry-run: some file would fail',
    [EXIT.usage]: RUN[EXIT.usage],
    [EXIT.stoppedEarly]: STOPPED_EARLY.replace('the batch', 'the watch'),
    [EXIT.interrupted]: `${SIGNALS} a second time, cutting the wind-down short`,
  },
  demo: {
    ...RUN,
    [EXIT.ok]: 'nothing failed',
    [EXIT.failed]: 'some sample failed',
    [EXIT.usage]: `${USAGE}; also an out dir genpipe cannot write in, or --json with --workers`,
  },
  files: GROUP,
  'files upload': CLIENT_WAIT,
  'files list': CLIENT_CALL,
  'files get': CLIENT_CALL,
  'files delete': CLIENT_CALL,
  generate: CLIENT_WAIT,
  generations: GROUP,
  'generations get': CLIENT_CALL,
  'generations wait': CLIENT_WAIT,
  'generations download': CLIENT_WAIT,
  legacy: GROUP,
  'legacy modify': CLIENT_WAIT,
  'legacy get': CLIENT_CALL,
  'legacy generate-video': CLIENT_WAIT,
  'legacy generate-image': CLIENT_WAIT,
  'legacy reframe-image': CLIENT_WAIT,
  'legacy reframe-video': CLIENT_WAIT,
  'legacy upscale': CLIENT_WAIT,
  'legacy add-audio': CLIENT_WAIT,
  'legacy list': CLIENT_CALL,
  'legacy delete': CLIENT_CALL,
  'legacy concepts': CLIENT_CALL,
  'legacy credits': CLIENT_CALL,
  dashboard: {
    [EXIT.ok]: 'stopped by SIGINT / SIGTERM after serving the page',
    [EXIT.failed]: 'the journal or the store could not be read',
    [EXIT.usage]: `${USAGE}; also no journal at the out dir, a --journal file that does not exist, or an address that cannot be listened on`,
  },
  status: {
    [EXIT.ok]: 'the summary was printed (whatever the runs it tells of ended with)',
    [EXIT.failed]: 'the journal could not be read',
    [EXIT.usage]: `${USAGE}; also no journal at the out dir (nothing ran there) or a --journal file that does not exist`,
    [EXIT.stoppedEarly]: 'the PostgreSQL store (--store) could not be reached',
  },
  worker: {
    [EXIT.ok]: 'stopped from its dashboard (--dashboard): the files in its hands go back to the queue',
    [EXIT.failed]: 'an error that ended the worker',
    [EXIT.usage]: `${USAGE}; also no store (--store or GENPIPE_STORE), or --metrics-host without --metrics-port`,
    [EXIT.stoppedEarly]:
      'the PostgreSQL store could not be reached when it started (once running, a worker waits for the store instead)',
    [EXIT.interrupted]: `${SIGNALS}, its normal end: the files in its hands go back to the queue`,
  },
};
