import { useEffect, useState } from 'preact/hooks';
import type { ApiKeyView, TeamView } from '../lib/admin.types';
import { describeError } from '../lib/api.client';
import { budgetUse, formatMoney, SPEND_DAYS, topKeys } from '../lib/spend.summary';
import { loadTeamSpend, type TeamSpend as Spend } from '../lib/team-spend.loader';
import { daysAgo, daysBetween, utcDay } from '../lib/utc.days';
import { BudgetMeter } from './budget-meter';
import { UsageChart } from './usage-chart';

interface Props {
  adminToken: string;
  team: TeamView;
  /** The keys the token sees, to name them (and to find the team's where usage does not name teams). */
  keys: ApiKeyView[];
}

/** A team's spend: its budget left in the period, spend and tokens per day over 30 days, its top keys. */
export function TeamSpend({ adminToken, team, keys }: Props) {
  const [spend, setSpend] = useState<Spend | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loadedAt, setLoadedAt] = useState<Date | null>(null);

  const load = async () => {
    try {
      setSpend(await loadTeamSpend(adminToken, team, keys));
      setError(null);
      setLoadedAt(new Date());
    } catch (e) {
      setSpend(null);
      setError(describeError(e));
    }
  };

  useEffect(() => {
    void load();
  }, [adminToken, team, keys]);

  const now = Date.now();
  const days = daysBetween(daysAgo(SPEND_DAYS - 1, now), utcDay(now));
  const charted = (spend?.rows ?? []).filter((row) => row.date >= days[0]!);
  // A gateway with spend reporting names its currency (null when nothing is priced).
  const priced = spend !== null && spend.report.currency !== undefined;
  const currency = spend?.report.currency ?? team.budget?.currency ?? null;
  const nameOf = (id: string) => keys.find((key) => key.id === id)?.name ?? id;
  const top = topKeys(charted);

  return (
    <section class="panel" aria-labelledby="team-spend-title">
      <h2 id="team-spend-title">Spend of {team.name}</h2>
      {error !== null && (
        <p class="notice" role="status" aria-label="Spend unavailable">
          The spend of this team cannot be read with this token: {error}
        </p>
      )}
      {spend && (
        <>
          <h3>Budget left</h3>
          {team.budget ? (
            <BudgetMeter
              uses={budgetUse(team.budget, spend.rows, now, team.created_at)}
              period={team.budget.period}
              currency={team.budget.currency}
            />
          ) : (
            <p class="sub">No budget: the team's keys spend without a team limit.</p>
          )}
          <h3>
            Spend per day (UTC), last {SPEND_DAYS} days{' '}
            {loadedAt && <span class="sub">— read at {loadedAt.toLocaleTimeString()}</span>}
          </h3>
          {priced ? (
            <UsageChart days={days} rows={charted} metric="cost" currency={currency} />
          ) : (
            <p class="sub">This gateway reports no cost: tokens only.</p>
          )}
          <h3>Tokens per day (UTC)</h3>
          <UsageChart days={days} rows={charted} metric="tokens" />
          <div class="table-wrap">
            <table>
              <caption>Top keys of {team.name} by spend</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col" class="num">
                    Tokens
                  </th>
                  <th scope="col" class="num">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {top.length === 0 && (
                  <tr>
                    <td colSpan={4}>No usage in the last {SPEND_DAYS} days.</td>
                  </tr>
                )}
                {top.map((key) => (
                  <tr key={key.key_id}>
                    <th scope="row">{nameOf(key.key_id)}</th>
                    <td class="num">{key.requests}</td>
                    <td class="num">{key.tokens}</td>
                    <td class="num">{formatMoney(key.cost, currency)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <div class="button-row">
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh spend
        </button>
      </div>
    </section>
  );
}
