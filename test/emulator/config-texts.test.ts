/**
 * The texts of a bad emulator config: each names the field, the shape it takes and what it received,
 * so the file can be fixed from the message alone.
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/emulator/config.ts';

function messageOf(input: unknown): string {
  try {
    resolveConfig(input);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(input)}`);
}

describe('emulator config texts', () => {
  it('refuse a rate window that is not whole seconds from 1 to a year', () => {
    const text = (v: string) =>
      `Expected a whole number of seconds between 1 and 31536000 (a year) for rate_window_s but received ${v}`;
    expect(messageOf({ rate_window_s: 1e12 })).toBe(text('1000000000000'));
    expect(messageOf({ rate_window_s: 0.5 })).toBe(text('0.5'));
    expect(resolveConfig({ rate_window_s: 3_000_000 }).rate_window_s).toBe(3_000_000);
  });

  it('say the shape of an object or list field, not only "an object"', () => {
    expect(messageOf({ processing_ms: 5 })).toBe(
      'Expected processing_ms: { image: <ms>, video: <ms>, image_edit?: <ms>, video_edit?: <ms>, video_reframe?: <ms> } (each a number of ms, or [min, max]) but received 5',
    );
    expect(messageOf({ clients: { id: 'a' } })).toBe(
      'Expected clients: [{ id, state?, rpm?, concurrency?, balance? }, …] but received {"id":"a"}',
    );
    expect(messageOf({ clients: ['a'] })).toBe(
      'Expected clients[0]: { id, state?, rpm?, concurrency?, balance? } but received "a"',
    );
    expect(messageOf({ keys: 'svc-api-x' })).toBe(
      'Expected keys: [{ key, client, revoked?, expires_at? }, …] but received "svc-api-x"',
    );
    expect(messageOf({ keys: [7] })).toBe(
      'Expected keys[0]: { key, client, revoked?, expires_at? } but received 7',
    );
    expect(messageOf({ costs: 1 })).toBe(
      'Expected costs: { <generation type>: <credits>, … } (types: image, image_edit, video, video_edit, video_reframe) but received 1',
    );
    expect(messageOf({ faults: true })).toBe(
      'Expected faults: { <fault>: <probability>, … } (faults: failure_codes, http_502, http_503, fetch_proxy_down, reset_before, reset_after, lose_answers, rate_backend_down, latency_ms) but received true',
    );
    expect(messageOf({ faults: { failure_codes: 0.1 } })).toBe(
      'Expected faults.failure_codes: { <failure_code>: <probability>, … } but received 0.1',
    );
    expect(messageOf([1])).toBe(
      'Expected a JSON object of config keys at the top of the config but received [1]',
    );
  });

  it('list the keys there are when one is unknown', () => {
    expect(messageOf({ proccessing_ms: 1 })).toBe(
      "Unknown config key 'proccessing_ms' (known: clients, keys, rate_window_s, processing_ms, queue_ms, output_url_ttl_s, upload_url_ttl_s, inline_upload_max_bytes, fetch_allow_hosts, costs, blocked_words, faults, seed, abuse_ceiling, json_body_max_bytes, callback_attempts, callback_timeout_ms, tiny_outputs, signing_secret)",
    );
  });

  it('refuse a key processing_ms does not have, instead of ignoring it', () => {
    expect(messageOf({ processing_ms: { images: 5 } })).toBe(
      "Unknown key 'images' in processing_ms (it has image, video, image_edit, video_edit and video_reframe)",
    );
  });

  it('say the range of a number without an upper bound plainly', () => {
    expect(messageOf({ queue_ms: -1 })).toBe('Expected a number of at least 0 for queue_ms but received -1');
    expect(messageOf({ faults: { http_503: 2 } })).toBe(
      'Expected a number between 0 and 1 for faults.http_503 but received 2',
    );
  });
});
