import type { ApiKeyView, SpendReport, SpendRow, TeamView } from './admin.types';
import { ApiError, requestJson } from './api.client';
import { rowsOfTeam, spendRange } from './spend.summary';

export interface TeamSpend {
  report: SpendReport;
  /** The team's rows of the report, over the charted days and its budget's period. */
  rows: SpendRow[];
}

/**
 * A team's usage: `/admin/usage?team=` where the gateway groups by team; where it does not know `team`
 * (a gateway without spend reporting answers 400 naming it), every key's usage, kept to the team's keys.
 */
export async function loadTeamSpend(
  token: string,
  team: TeamView,
  keys: readonly ApiKeyView[],
  now = Date.now(),
): Promise<TeamSpend> {
  const range = spendRange(team.budget, now, team.created_at);
  const read = (query: Record<string, string>) =>
    requestJson<SpendReport>(`/admin/usage?${new URLSearchParams({ ...range, ...query }).toString()}`, {
      token,
    });
  let report: SpendReport;
  try {
    report = await read({ team: team.id });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 400 && error.param === 'team')) throw error;
    report = await read({});
  }
  return { report, rows: rowsOfTeam(report.data, team.id, keys) };
}
