import {
  parseCompletionId,
  parseStoredCompletionListQuery,
  parseStoredMessageListQuery,
  storeMessageIndexOf,
  StoredCompletionUpdateDto,
} from './stored-completion-query.dto';
import { validateDto } from './validate-dto';
import { refusal } from '@mgw/testing';

const pairs = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));

describe('stored completion ids', () => {
  it('accepts the gateway’s completion ids and refuses anything else with a 400 naming the id', () => {
    expect(parseCompletionId('chatcmpl-0123456789abcdef')).toBe('chatcmpl-0123456789abcdef');
    for (const id of [
      '0123456789abcdef',
      'chatcmpl-',
      'chatcmpl-short',
      'chatcmpl-a b c d e f',
      `chatcmpl-${'a'.repeat(65)}`,
    ]) {
      const error = refusal(() => parseCompletionId(id));
      expect(error.status).toBe(400);
      expect(error.toBody().error).toMatchObject({
        param: 'completion_id',
        code: 'invalid_completion_id',
        type: 'invalid_request_error',
      });
    }
  });

  it('reads message ids as positions of the completion’s request', () => {
    expect(storeMessageIndexOf('chatcmpl-abcdefgh', 'chatcmpl-abcdefgh-0')).toBe(0);
    expect(storeMessageIndexOf('chatcmpl-abcdefgh', 'chatcmpl-abcdefgh-12')).toBe(12);
    expect(storeMessageIndexOf('chatcmpl-abcdefgh', 'chatcmpl-abcdefgh-01')).toBeNull();
    expect(storeMessageIndexOf('chatcmpl-abcdefgh', 'chatcmpl-abcdefgh-x')).toBeNull();
    expect(storeMessageIndexOf('chatcmpl-abcdefgh', 'chatcmpl-other000-1')).toBeNull();
  });
});

describe('the list query', () => {
  it('groups metadata[k]=v pairs (the openai SDK’s encoding) and reads limit as a number', () => {
    const query = parseStoredCompletionListQuery({
      after: 'chatcmpl-0123456789abcdef',
      limit: '5',
      order: 'desc',
      model: 'sim-chat',
      'metadata[team]': 'search',
      'metadata[run]': '7',
    });
    expect({ ...query }).toEqual({
      after: 'chatcmpl-0123456789abcdef',
      limit: 5,
      order: 'desc',
      model: 'sim-chat',
      metadata: { team: 'search', run: '7' },
    });
    expect({ ...parseStoredCompletionListQuery({}) }).toEqual({});
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a limit of 0', { limit: '0' }, 'limit'],
    ['a limit over 100', { limit: '101' }, 'limit'],
    ['a limit that is no number', { limit: 'ten' }, 'limit'],
    ['an unknown order', { order: 'newest' }, 'order'],
    ['an unknown parameter', { page: '2' }, 'page'],
    ['a repeated parameter', { model: ['a', 'b'] }, 'model'],
    [
      '17 metadata pairs',
      Object.fromEntries(Object.entries(pairs(17)).map(([k, v]) => [`metadata[${k}]`, v])),
      'metadata',
    ],
    ['a metadata key over 64 characters', { [`metadata[${'k'.repeat(65)}]`]: 'v' }, 'metadata'],
    ['a metadata value over 512 characters', { 'metadata[k]': 'v'.repeat(513) }, 'metadata'],
  ])('refuses %s with a 400 naming it', (_label, query, param) => {
    const error = refusal(() => parseStoredCompletionListQuery(query));
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
  });

  it('takes after, limit and order for messages, and nothing else', () => {
    expect({ ...parseStoredMessageListQuery({ after: 'x-1', limit: '2', order: 'asc' }) }).toEqual({
      after: 'x-1',
      limit: 2,
      order: 'asc',
    });
    expect(refusal(() => parseStoredMessageListQuery({ model: 'm' })).param).toBe('model');
  });
});

describe('the update body', () => {
  it('takes metadata, or null to clear it', () => {
    expect(validateDto(StoredCompletionUpdateDto, { metadata: { a: 'b' } }).metadata).toEqual({ a: 'b' });
    expect(validateDto(StoredCompletionUpdateDto, { metadata: null }).metadata).toBeNull();
  });

  it.each<[string, unknown]>([
    ['no metadata', {}],
    ['17 pairs', { metadata: pairs(17) }],
    ['a key over 64 characters', { metadata: { ['k'.repeat(65)]: 'v' } }],
    ['a value over 512 characters', { metadata: { k: 'v'.repeat(513) } }],
    ['a number value', { metadata: { k: 1 } }],
  ])('refuses %s with a 400 naming metadata', (_label, body) => {
    const error = refusal(() => validateDto(StoredCompletionUpdateDto, body));
    expect(error.status).toBe(400);
    expect(error.param).toBe('metadata');
  });

  it('refuses metadata of 200,000 pairs by their count, with the message the pair rule gives 17', () => {
    const many = refusal(() => validateDto(StoredCompletionUpdateDto, { metadata: pairs(200_000) }));
    expect([many.status, many.param, many.message]).toEqual([
      400,
      'metadata',
      `Invalid 'metadata': expected at most 16 key-value pairs, got 200000.`,
    ]);
    expect(refusal(() => validateDto(StoredCompletionUpdateDto, { metadata: pairs(17) })).message).toBe(
      `Invalid 'metadata': expected at most 16 key-value pairs, got 17.`,
    );
  });

  it('refuses other fields', () => {
    expect(refusal(() => validateDto(StoredCompletionUpdateDto, { metadata: {}, model: 'x' })).param).toBe(
      'model',
    );
  });
});
