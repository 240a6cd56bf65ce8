import type { ApiKeyView } from './admin.types';
import { createBody, EMPTY_SETTINGS, limitsOf, settingsOf, updateBody } from './key-settings.form';

const key: ApiKeyView = {
  id: 'key_0123456789abcdef01234567',
  object: 'api_key',
  name: 'team',
  prefix: 'sk-gw-abcd',
  created_at: 1_700_000_000,
  expires_at: 1_700_006_399, // 2023-11-14T23:59:59Z
  models: ['sim-chat', 'sim-image'],
  rpm: 60,
  tpm: null,
  max_concurrent: 4,
  priority: 'high',
  weight: 3,
  disabled: false,
  revoked_at: null,
  team_id: null,
  budget: null,
};

describe('key settings form', () => {
  it('creates with the fields that are set, absent ones meaning no limit', () => {
    expect(createBody(' ci ', { ...EMPTY_SETTINGS, models: 'sim-chat,  sim-image', rpm: '120' })).toEqual({
      name: 'ci',
      models: ['sim-chat', 'sim-image'],
      rpm: 120,
      priority: 'normal',
      weight: 1,
    });
    expect(createBody('x', { ...EMPTY_SETTINGS, expires: '2030-01-31' })).toMatchObject({
      expires_at: Date.UTC(2030, 0, 31, 23, 59, 59) / 1000,
    });
  });

  it('round-trips a key into the form', () => {
    expect(settingsOf(key)).toEqual({
      models: 'sim-chat, sim-image',
      rpm: '60',
      tpm: '',
      maxConcurrent: '4',
      priority: 'high',
      weight: '3',
      budget: { spend: '', tokens: '', period: 'month', softThreshold: '', currency: '' },
      expires: '2023-11-14',
      team: '',
    });
    expect(updateBody(settingsOf(key), settingsOf(key))).toEqual({});
  });

  it('updates only what changed; an emptied field is null (cleared)', () => {
    const before = settingsOf(key);
    expect(updateBody(before, { ...before, rpm: '30', maxConcurrent: '', models: '' })).toEqual({
      rpm: 30,
      max_concurrent: null,
      models: null,
    });
    // The (past) expiry is not sent again with new limits: the API would refuse it.
    expect(updateBody(before, { ...before, tpm: '1000' })).toEqual({ tpm: 1000 });
    expect(updateBody(before, { ...before, expires: '' })).toEqual({ expires_at: null });
    // An emptied weight is the default weight, 1.
    expect(updateBody(before, { ...before, weight: '' })).toEqual({ weight: 1 });
  });

  it("sets and clears a key's team and budget", () => {
    const before = settingsOf(key, 'USD');
    const budget = { ...before.budget, spend: '5', period: 'day' as const };
    expect(updateBody(before, { ...before, team: 'team_1', budget })).toEqual({
      team_id: 'team_1',
      budget: { spend: 5, currency: 'USD', period: 'day' },
    });
    const inTeam = settingsOf({
      ...key,
      team_id: 'team_1',
      budget: { currency: null, spend: null, tokens: 9, period: 'total', soft_threshold: 0.5 },
    });
    expect(updateBody(inTeam, { ...inTeam, team: '', budget: { ...inTeam.budget, tokens: '' } })).toEqual({
      team_id: null,
      budget: null,
    });
    expect(
      createBody('x', {
        ...EMPTY_SETTINGS,
        team: 'team_1',
        budget: { ...EMPTY_SETTINGS.budget, tokens: '100' },
      }),
    ).toEqual({
      name: 'x',
      priority: 'normal',
      weight: 1,
      team_id: 'team_1',
      budget: { tokens: 100, period: 'month' },
    });
  });

  it('summarises the limits of a key', () => {
    expect(limitsOf(key)).toBe('60 rpm, 4 at once, until 2023-11-14');
    expect(limitsOf({ ...key, rpm: null, max_concurrent: null, expires_at: null })).toBe('none');
  });
});
