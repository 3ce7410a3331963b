import { describe, expect, it } from 'vitest';
import { validateModifyRequest } from '../../src/spec/index.ts';

const SOURCE = 'https://media.example.com/clip.mp4';
const base = (extra: Record<string, unknown> = {}) => ({
  media: { url: SOURCE },
  model: 'ray-2',
  mode: 'flex_1',
  ...extra,
});
const MODELS = "one of 'ray-2', 'ray-flash-2'";
const MODES =
  "one of 'adhere_1', 'adhere_2', 'adhere_3', 'flex_1', 'flex_2', 'flex_3', 'reimagine_1', 'reimagine_2', 'reimagine_3'";

describe('validateModifyRequest', () => {
  it('applies the default generation_type and keeps only the request fields', () => {
    expect(validateModifyRequest(base())).toEqual({
      ok: true,
      request: { generation_type: 'modify_video', media: { url: SOURCE }, model: 'ray-2', mode: 'flex_1' },
    });
  });

  it('accepts every optional field', () => {
    const body = base({
      generation_type: 'modify_video',
      first_frame: { url: 'http://media.example.com/first.png' },
      model: 'ray-flash-2',
      mode: 'reimagine_3',
      prompt: '',
      callback_url: 'https://hooks.example.com/luma?x=1',
    });
    expect(validateModifyRequest(body)).toEqual({ ok: true, request: body });
  });

  it('returns copies of the media objects', () => {
    const body = { ...base(), first_frame: { url: SOURCE } };
    const result = validateModifyRequest(body);
    if (!result.ok) throw new Error(result.detail);
    result.request.media.url = 'changed';
    result.request.first_frame!.url = 'changed';
    expect(body.media.url).toBe(SOURCE);
    expect(body.first_frame.url).toBe(SOURCE);
  });

  const rejected: Array<[string, unknown, string]> = [
    ['body not an object', [base()], 'Expected object for request body but received an array'],
    ['unknown field', base({ duration: '5s' }), "Unknown field 'duration'"],
    [
      'generation_type other than modify_video',
      base({ generation_type: 'video' }),
      "Expected one of 'modify_video' for generation_type but received 'video'",
    ],
    ['media missing', { model: 'ray-2', mode: 'flex_1' }, 'Expected object for media but received nothing'],
    ['media a string', base({ media: SOURCE }), `Expected object for media but received '${SOURCE}'`],
    ['media.url missing', base({ media: {} }), 'Expected http(s) URL for media.url but received nothing'],
    [
      'media.url not a URI',
      base({ media: { url: 'clip.mp4' } }),
      "Expected http(s) URL for media.url but received 'clip.mp4'",
    ],
    [
      'media.url not http(s)',
      base({ media: { url: 'file:///etc/passwd' } }),
      "Expected http(s) URL for media.url but received 'file:///etc/passwd'",
    ],
    ['unknown media field', base({ media: { url: SOURCE, type: 'video' } }), "Unknown field 'media.type'"],
    ['first_frame not an object', base({ first_frame: 3 }), 'Expected object for first_frame but received 3'],
    [
      'first_frame.url not a URI',
      base({ first_frame: { url: 7 } }),
      'Expected http(s) URL for first_frame.url but received 7',
    ],
    [
      'model missing',
      { media: { url: SOURCE }, mode: 'flex_1' },
      `Expected ${MODELS} for model but received nothing`,
    ],
    [
      'model of the agents surface',
      base({ model: 'ray-3.2' }),
      `Expected ${MODELS} for model but received 'ray-3.2'`,
    ],
    [
      'mode missing',
      { media: { url: SOURCE }, model: 'ray-2' },
      `Expected ${MODES} for mode but received nothing`,
    ],
    ['mode unknown', base({ mode: 'adhere_9' }), `Expected ${MODES} for mode but received 'adhere_9'`],
    ['prompt not a string', base({ prompt: ['a'] }), 'Expected string for prompt but received an array'],
    [
      'callback_url not http(s)',
      base({ callback_url: 'mailto:ops@example.com' }),
      "Expected http(s) URL for callback_url but received 'mailto:ops@example.com'",
    ],
    ['order: unknown field first', { colour: 1, model: 'x' }, "Unknown field 'colour'"],
    [
      'order: media before model and mode',
      { model: 'x', mode: 'y' },
      'Expected object for media but received nothing',
    ],
    [
      'order: model before mode',
      base({ model: 'x', mode: 'y' }),
      `Expected ${MODELS} for model but received 'x'`,
    ],
  ];
  it.each(rejected)('rejects %s', (_name, body, detail) => {
    expect(validateModifyRequest(body)).toEqual({ ok: false, status: 400, detail });
  });
});
