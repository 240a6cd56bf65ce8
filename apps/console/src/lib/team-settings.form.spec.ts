import type { TeamView } from './admin.types';
import { createTeamBody, EMPTY_TEAM, teamSettingsOf, updateTeamBody } from './team-settings.form';

const team: TeamView = {
  id: 'team_0123456789abcdef01234567',
  object: 'team',
  name: 'search',
  created_at: 1_700_000_000,
  models: null,
  rpm: 600,
  tpm: null,
  max_concurrent: 8,
  priority: 'normal',
  weight: 2,
  budget: { currency: 'USD', spend: 10, tokens: null, period: 'month', soft_threshold: 0.8 },
  keys: 3,
};

describe('team settings form', () => {
  it('creates with the name and the fields that are set', () => {
    expect(
      createTeamBody({
        ...EMPTY_TEAM,
        name: ' search ',
        rpm: '600',
        weight: '2',
        budget: { ...EMPTY_TEAM.budget, spend: '10', currency: 'USD', softThreshold: '90' },
      }),
    ).toEqual({
      name: 'search',
      rpm: 600,
      priority: 'normal',
      weight: 2,
      budget: { spend: 10, currency: 'USD', period: 'month', soft_threshold: 0.9 },
    });
  });

  it('round-trips a team and updates only what changed', () => {
    const before = teamSettingsOf(team);
    expect(updateTeamBody(before, before)).toEqual({});
    expect(updateTeamBody(before, { ...before, maxConcurrent: '', name: 'find' })).toEqual({
      name: 'find',
      max_concurrent: null,
    });
    expect(updateTeamBody(before, { ...before, budget: { ...before.budget, period: 'day' } })).toEqual({
      budget: { spend: 10, currency: 'USD', period: 'day', soft_threshold: 0.8 },
    });
  });
});
