import { describe, expect, it } from 'vitest';
import { createRedactor, REDACTED, redact } from '../../src/client/redact.ts';

describe('the one redactor', () => {
  it("the client's redact masks the known secrets only, down to 4 characters", () => {
    expect(redact('key abcd and svc-api-other-key', ['abcd'])).toBe(`key ${REDACTED} and svc-api-other-key`);
    expect(redact('key abc', ['abc'])).toBe('key abc');
  });

  it('keeps a published key visible unless it is one of the secrets', () => {
    const published = 'svc-api-published-default';
    const text = `use ${published}, not svc-api-private-one`;
    expect(createRedactor([], { keep: [published] })(text)).toBe(`use ${published}, not ${REDACTED}`);
    expect(createRedactor([published], { keep: [published] })(text)).toBe(`use ${REDACTED}, not ${REDACTED}`);
  });

  it('masks the password of a URL, not its user, host, port or path', () => {
    const r = createRedactor();
    expect(r('store postgres://bob:s3cr3t@db.local:5432/genpipe and http://host:8080/a@b')).toBe(
      `store postgres://bob:${REDACTED}@db.local:5432/genpipe and http://host:8080/a@b`,
    );
  });
});
