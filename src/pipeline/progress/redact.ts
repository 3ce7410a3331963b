/**
 * Keeping secrets out of everything genpipe prints or writes: progress lines, --json events, result.json,
 * report.json and report.html all pass their texts through a redactor built from the secrets the runner
 * knows (API keys), which also masks anything shaped like an API key or a bearer token. The redactor is
 * the client's (src/client/redact.ts), the one implementation.
 */
export { createRedactor, REDACTED, type Redact, redactDeep, redactShapes } from '../../client/index.ts';
