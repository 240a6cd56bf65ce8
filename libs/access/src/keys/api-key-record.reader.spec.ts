import { readApiKeyRecord, InvalidKeyRecordError } from './api-key-record.reader';
import type { ApiKeyRecord } from './api-key.record';

const stored: ApiKeyRecord = {
  id: `key_${'a1'.repeat(12)}`,
  name: 'ci',
  hash: 'f'.repeat(64),
  prefix: 'sk-gw-Ab_9',
  createdAt: 1_700_000_000,
  expiresAt: null,
  models: ['sim-chat'],
  rpm: 60,
  tpm: null,
  maxConcurrent: 2,
  priority: 'high',
  weight: 1,
  disabled: false,
  revokedAt: null,
  teamId: null,
  budget: null,
};

const readBack = (change: Record<string, unknown>) =>
  readApiKeyRecord(JSON.parse(JSON.stringify({ ...stored, ...change })));

describe('readApiKeyRecord', () => {
  it('reads back what the store writes, field for field', () => {
    expect(readApiKeyRecord(JSON.parse(JSON.stringify(stored)))).toEqual(stored);
  });

  it('accepts the values the admin API can store: zero times, a one-space name, no limits, absent optionals', () => {
    expect(readBack({ expiresAt: 0, revokedAt: 0, name: ' ', models: null, rpm: null })).toMatchObject({
      expiresAt: 0,
      revokedAt: 0,
      name: ' ',
      models: null,
      rpm: null,
    });
    const { expiresAt: _e, models: _m, tpm: _t, teamId: _team, ...without } = stored;
    expect(readApiKeyRecord(without)).toMatchObject({
      expiresAt: null,
      models: null,
      tpm: null,
      teamId: null,
    });
    expect(readBack({ teamId: `team_${'0b'.repeat(12)}` }).teamId).toBe(`team_${'0b'.repeat(12)}`);
  });

  it('reads a budget back, and refuses a malformed one', () => {
    const budget = { currency: 'USD', spend: 5_000_000, tokens: null, period: 'month', softThreshold: 0.8 };
    expect(readBack({ budget }).budget).toEqual(budget);
    expect(() => readBack({ budget: { ...budget, period: 'week' } })).toThrow(InvalidKeyRecordError);
    expect(() => readBack({ budget: { ...budget, spend: -1 } })).toThrow(/key record: budget: spend/);
    expect(() => readBack({ budget: { ...budget, softThreshold: 2 } })).toThrow(/softThreshold/);
  });

  it.each([
    ['not an object', () => readApiKeyRecord([stored]), 'key record: key record must be an object'],
    ['an unknown field', () => readBack({ admin: true }), 'key record: admin is not a field of a key record'],
    ['a bad id', () => readBack({ id: 'key_1' }), 'key record: id must match'],
    ['an empty name', () => readBack({ name: '' }), 'key record: name must be 1 to 128 characters long'],
    ['a long name', () => readBack({ name: 'n'.repeat(129) }), 'key record: name must be 1 to 128'],
    ['a bad hash', () => readBack({ hash: 'F'.repeat(64) }), 'key record: hash must match'],
    ['a bad prefix', () => readBack({ prefix: 'sk-gw-abc' }), 'key record: prefix must match'],
    [
      'a negative creation',
      () => readBack({ createdAt: -1 }),
      'key record: createdAt must be a non-negative',
    ],
    ['a fractional expiry', () => readBack({ expiresAt: 1.5 }), 'key record: expiresAt must be an integer'],
    [
      'models not strings',
      () => readBack({ models: ['a', 1] }),
      'key record: models must be an array of strings',
    ],
    ['a zero rpm', () => readBack({ rpm: 0 }), 'key record: rpm must be an integer of at least 1'],
    ['a string tpm', () => readBack({ tpm: '5' }), 'key record: tpm must be an integer of at least 1'],
    ['a zero max', () => readBack({ maxConcurrent: 0 }), 'key record: maxConcurrent must be an integer'],
    ['an odd priority', () => readBack({ priority: 'urgent' }), "key record: priority must be 'high' or"],
    ['disabled not boolean', () => readBack({ disabled: 'no' }), 'key record: disabled must be a boolean'],
    ['a bad team id', () => readBack({ teamId: 'team_1' }), 'key record: teamId must be a team id'],
    ['a missing hash', () => readBack({ hash: undefined }), 'key record: hash must be a string'],
  ])('refuses %s', (_case, readIt, message) => {
    expect(readIt).toThrow(InvalidKeyRecordError);
    expect(readIt).toThrow(message);
  });
});
