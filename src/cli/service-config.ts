/**
 * Where the service is and how to authenticate: from flags first, then the environment.
 * The only place that reads GENPIPE_* connection variables.
 */
import { credentialUrlProblem, maskUrlPassword } from '../client/redact.ts';
import { API_KEY_PREFIX } from '../spec/index.ts';
import { UsageError } from './usage-error.ts';

export interface ServiceFlags {
  apiKey?: string;
  baseUrl?: string;
  legacyBaseUrl?: string;
  legacyToken?: string;
}

export interface ServiceConfig {
  apiKey: string;
  /** Agents base URL without /v1. */
  baseUrl: string;
  legacyBaseUrl?: string;
  legacyToken?: string;
}

export const ENV = {
  apiKey: 'GENPIPE_API_KEY',
  baseUrl: 'GENPIPE_BASE_URL',
  legacyBaseUrl: 'GENPIPE_LEGACY_BASE_URL',
  legacyToken: 'GENPIPE_LEGACY_TOKEN',
  store: 'GENPIPE_STORE',
} as const;

/** Adds the shared connection flags to a command. */
export function serviceFlagHelp(): Array<[string, string]> {
  return [
    ['--api-key <key>', `agents API key (default: $${ENV.apiKey})`],
    ['--base-url <url>', `agents base URL; paths start with /v1 (default: $${ENV.baseUrl})`],
    ['--legacy-base-url <url>', `legacy base URL incl. /dream-machine/v1 (default: $${ENV.legacyBaseUrl})`],
    ['--legacy-token <token>', `legacy bearer token (default: $${ENV.legacyToken}, else the API key)`],
  ];
}

function clean(v: string | undefined): string | undefined {
  const t = v?.trim();
  return t ? t : undefined;
}

/**
 * A service URL must be an absolute http(s) URL; one that is not is named with its password masked by
 * position (maskUrlPassword), since a URL that does not parse — given without a scheme — cannot be
 * masked by parsing it.
 *
 * @throws UsageError `--base-url / GENPIPE_BASE_URL must be an http(s) URL, got 'alice:[redacted]@host'`;
 *   also for one whose password a raw `#`, `/`, `?` or `@` splits, or with a #fragment
 *   (credentialUrlProblem), not naming it
 */
function checkHttpUrl(url: string, given: string): void {
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    // named below
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new UsageError(`${given} must be an http(s) URL, got '${maskUrlPassword(url)}'`);
  }
  const split = credentialUrlProblem(url);
  if (split !== null) throw new UsageError(`${given}: the URL ${split}`);
}

/**
 * Resolves the service from flags, then the environment.
 * @throws UsageError that explains both ways when something is missing; never echoes the key.
 */
export function resolveServiceConfig(
  flags: ServiceFlags,
  env: NodeJS.ProcessEnv = process.env,
): ServiceConfig {
  const apiKey = clean(flags.apiKey) ?? clean(env[ENV.apiKey]);
  let baseUrl = clean(flags.baseUrl) ?? clean(env[ENV.baseUrl]);
  const missing: string[] = [];
  if (!baseUrl) missing.push(`the service URL (--base-url or ${ENV.baseUrl})`);
  if (!apiKey) missing.push(`an API key (--api-key or ${ENV.apiKey})`);
  if (missing.length) {
    throw new UsageError(
      `no service configured: give ${missing.join(' and ')}, or run against the local emulator ` +
        `(\`genpipe serve\` in another terminal, then ${ENV.baseUrl}=http://127.0.0.1:4010 ` +
        `${ENV.apiKey}=svc-api-emulator-default-key)`,
    );
  }
  if (!apiKey!.startsWith(API_KEY_PREFIX)) {
    throw new UsageError(
      `the API key must start with '${API_KEY_PREFIX}' (check --api-key or ${ENV.apiKey})`,
    );
  }
  checkHttpUrl(baseUrl!, `--base-url / ${ENV.baseUrl}`);
  baseUrl = baseUrl!.replace(/\/+$/, '').replace(/\/v1$/, '');
  const legacyBaseUrl = clean(flags.legacyBaseUrl) ?? clean(env[ENV.legacyBaseUrl]);
  if (legacyBaseUrl) checkHttpUrl(legacyBaseUrl, `--legacy-base-url / ${ENV.legacyBaseUrl}`);
  const legacyToken = clean(flags.legacyToken) ?? clean(env[ENV.legacyToken]);
  return {
    apiKey: apiKey!,
    baseUrl,
    ...(legacyBaseUrl ? { legacyBaseUrl: legacyBaseUrl.replace(/\/+$/, '') } : {}),
    ...(legacyToken ? { legacyToken } : {}),
  };
}
