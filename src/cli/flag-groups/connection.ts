/** The connection flags: which service, and how to authenticate (service-config.ts resolves them). */
import { Option } from 'commander';
import { LEGACY_BASE_PATH } from '../../spec/index.ts';
import { serviceFlagHelp } from '../service-config.ts';
import { FlagGroup } from './group.ts';

/** --api-key, --base-url, --legacy-base-url, --legacy-token. */
export const CONNECTION = new FlagGroup(
  'Connection flags:',
  serviceFlagHelp().map(
    ([flags, help]) =>
      () =>
        new Option(
          flags,
          flags.startsWith('--legacy-base-url')
            ? help.replace(/\)$/, `, else <base-url>${LEGACY_BASE_PATH})`)
            : help,
        ),
  ),
);
