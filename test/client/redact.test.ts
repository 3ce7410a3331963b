import { describe, expect, it } from 'vitest';
import {
  createRedactor,
  MIN_SECRET_LENGTH,
  maskUrlPassword,
  mayHoldShape,
  REDACTED,
  redact,
  redactDeep,
} from '../../src/client/redact.ts';

describe('the one redactor', () => {
  it("the client's redact masks the known secrets only, down to MIN_SECRET_LENGTH characters", () => {
    const secret = 'abcdefgh';
    expect(secret.length).toBe(MIN_SECRET_LENGTH);
    expect(redact(`key ${secret} and svc-api-other-key`, [secret])).toBe(
      `key ${REDACTED} and svc-api-other-key`,
    );
    expect(redact('key abcdefg', ['abcdefg'])).toBe('key abcdefg');
  });

  it('masks a short password where it stands in a URL, not its letters elsewhere', () => {
    const r = createRedactor(['p']);
    expect(r('cannot connect to the store at postgres://u:p@db:5432/postgres: password refused')).toBe(
      `cannot connect to the store at postgres://u:${REDACTED}@db:5432/postgres: password refused`,
    );
  });

  it('keeps a published key visible unless it is one of the secrets', () => {
    const published = 'svc-api-published-default';
    const text = `use ${published}, not svc-api-private-one`;
    expect(createRedactor([], { keep: [published] })(text)).toBe(`use ${published}, not ${REDACTED}`);
    expect(createRedactor([published], { keep: [published] })(text)).toBe(`use ${REDACTED}, not ${REDACTED}`);
  });

  it("masks a URL's query value named as a credential, not a signature's or a file's name", () => {
    const r = createRedactor();
    expect(r('media https://cdn.example.com/clips/a.mp4?token=abc123&w=2 sent')).toBe(
      `media https://cdn.example.com/clips/a.mp4?token=${REDACTED}&w=2 sent`,
    );
    expect(r('https://cdn/x?size=1&API_KEY=k-9')).toBe(`https://cdn/x?size=1&API_KEY=${REDACTED}`);
    expect(r('https://h/_storage/outputs/g/0?expires=1&sig=abc')).toBe(
      'https://h/_storage/outputs/g/0?expires=1&sig=abc',
    );
    expect(r('token=abc.txt and my key=value.png')).toBe('token=abc.txt and my key=value.png');
  });

  it('masks the password of a URL, not its user, host, port or path', () => {
    const r = createRedactor();
    expect(r('store postgres://bob:s3cr3t@db.local:5432/genpipe and http://host:8080/a@b')).toBe(
      `store postgres://bob:${REDACTED}@db.local:5432/genpipe and http://host:8080/a@b`,
    );
  });

  it('masks a URL password with a space in it, or in a URL without a scheme; not a port, a time or a file name', () => {
    const r = createRedactor();
    expect(r('could not ask http://alice:Hunter2 Secret@127.0.0.1:4010/_emulator/costs: refused')).toBe(
      `could not ask http://alice:${REDACTED}@127.0.0.1:4010/_emulator/costs: refused`,
    );
    expect(r("got 'alice:Hunter2Secret@127.0.0.1:47811'")).toBe(`got 'alice:${REDACTED}@127.0.0.1:47811'`);
    expect(r('--store u:pw@db/x: not a store URL')).toBe(`--store u:${REDACTED}@db/x: not a store URL`);
    const kept = [
      'http://127.0.0.1:4010 refused; ask bob@example.com',
      'http://127.0.0.1:4010. Mail bob@example.com',
      '[06:00:01] a:b@c.png: succeeded',
      'at 12:30 we wrote to bob@example.com',
    ];
    for (const text of kept) expect(r(text)).toBe(text);
  });

  it('maskUrlPassword finds the password of a given URL by position, whether or not it parses', () => {
    expect(maskUrlPassword('alice:Hunter2 Secret@127.0.0.1:4010')).toBe(`alice:${REDACTED}@127.0.0.1:4010`);
    expect(maskUrlPassword('postgres://u:a/b#c@db:5432/x', '***')).toBe('postgres://u:***@db:5432/x');
    expect(maskUrlPassword('http://alice@host/a')).toBe('http://alice@host/a');
    expect(maskUrlPassword('http://host:8080/a@b')).toBe('http://host:8080/a@b');
    expect(maskUrlPassword('http://host/p:x@y')).toBe('http://host/p:x@y');
  });

  it('masks a key-shaped text, not a file name shaped like one (in a folder, or with an extension)', () => {
    const r = createRedactor();
    expect(r('key svc-api-abcdef123456.')).toBe(`key ${REDACTED}.`);
    expect(r('"svc-api-abcdef123456", svc-api-xyz789abc; ?k=svc-api-q1w2e3r4&x')).toBe(
      `"${REDACTED}", ${REDACTED}; ?k=${REDACTED}&x`,
    );
    expect(r('small/svc-api-mykey1234567890abcdef.txt')).toBe('small/svc-api-mykey1234567890abcdef.txt');
    expect(r('svc-api-mykey1234567890abcdef.txt/result.json')).toBe(
      'svc-api-mykey1234567890abcdef.txt/result.json',
    );
    expect(r('out/svc-api-otherkey99999999999/a.png')).toBe('out/svc-api-otherkey99999999999/a.png');
  });

  it('masks only the known secrets in file names and paths of JSON data', () => {
    const r = createRedactor(['svc-api-the-real-key']);
    const data = {
      input: 'svc-api-looks-like-one',
      place: 'svc-api-looks-like-one',
      outputs: ['svc-api-looks-like-one/a.png', 'svc-api-the-real-key/b.png'],
      reason: 'refused svc-api-other-key and svc-api-the-real-key',
    };
    expect(redactDeep(data, r)).toEqual({
      input: 'svc-api-looks-like-one',
      place: 'svc-api-looks-like-one',
      outputs: ['svc-api-looks-like-one/a.png', `${REDACTED}/b.png`],
      reason: `refused ${REDACTED} and ${REDACTED}`,
    });
  });

  it('skips the shape patterns only for texts none of them can match', () => {
    const shaped = [
      'https://cdn.example/a.png?token=abcdefghij',
      'see svc-api-0123456789abcdef now',
      'Authorization: bEaReR abcdefghijkl',
      'postgres://bob:hunter2hunter2@db:5432/genpipe',
      'bob:hunter2hunter2@db.example:5432',
    ];
    const r = createRedactor();
    for (const text of shaped) {
      expect(mayHoldShape(text), text).toBe(true);
      expect(r(text), text).toContain(REDACTED);
    }
    for (const text of ['reported', 'uni-1', 'd000/p000001.txt', 'the model failed: 42 s', 'svc-apix']) {
      expect(mayHoldShape(text), text).toBe(false);
      expect(r(text)).toBe(text);
    }
  });
});
