import { useEffect, useState } from 'preact/hooks';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { UsageChart, valueOf, type UsageMetric } from '../components/usage-chart';
import type { AdminActor } from '../lib/admin-actor.hook';
import { ApiError, describeError, requestJson } from '../lib/api.client';
import type { ApiKeyView, SpendReport } from '../lib/admin.types';
import { formatMoney } from '../lib/spend.summary';
import { daysAgo, daysBetween } from '../lib/utc.days';

interface Props {
  adminToken: string;
  /** A team's token reads its team's usage only. */
  actor: AdminActor;
  /** Shown: the report is read again each time the view is opened. */
  active: boolean;
}

export function UsageView({ adminToken, actor, active }: Props) {
  const [from, setFrom] = useState(() => daysAgo(6));
  const [to, setTo] = useState(() => daysAgo(0));
  const [key, setKey] = useState('');
  const [metric, setMetric] = useState<UsageMetric>('tokens');
  const [keys, setKeys] = useState<ApiKeyView[]>([]);
  const [report, setReport] = useState<SpendReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loadedAt, setLoadedAt] = useState<Date | null>(null);

  const load = async () => {
    const query = new URLSearchParams({ from, to });
    if (key) query.set('key', key);
    if (actor.kind === 'team' && actor.teamId !== null) query.set('team', actor.teamId);
    try {
      const [usage, list] = await Promise.all([
        requestJson<SpendReport>(`/admin/usage?${query.toString()}`, { token: adminToken }),
        requestJson<{ data: ApiKeyView[] }>('/admin/keys', { token: adminToken }),
      ]);
      setReport(usage);
      setKeys(list.data);
      setError(null);
      setLoadedAt(new Date());
    } catch (e) {
      setReport(null);
      setError(
        actor.kind === 'team' && e instanceof ApiError && (e.status === 403 || e.status === 404)
          ? `This gateway does not show usage to a team's admin token (${describeError(e)}).`
          : describeError(e),
      );
    }
  };

  useEffect(() => {
    if (adminToken && active) void load();
  }, [adminToken, actor, active, from, to, key]);

  if (!adminToken) return <NeedsCredential what="Admin token" />;

  const nameOf = (id: string) =>
    keys.find((k) => k.id === id)?.name ?? (id === 'unattributed' ? 'bootstrap keys' : id);
  const rows = report?.data ?? [];
  const days = report ? daysBetween(report.from, report.to) : [];
  // A gateway with spend reporting names its currency (null when nothing is priced).
  const priced = report?.currency !== undefined;
  const currency = report?.currency ?? null;

  return (
    <section class="view" aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <form
        class="panel field-row"
        aria-label="Usage range"
        onSubmit={(e) => {
          e.preventDefault();
          void load();
        }}
      >
        <div class="field">
          <label for="usage-from">From</label>
          <input
            id="usage-from"
            type="date"
            value={from}
            max={to}
            onChange={(e) => setFrom(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="usage-to">To</label>
          <input
            id="usage-to"
            type="date"
            value={to}
            min={from}
            onChange={(e) => setTo(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="usage-key">Key</label>
          <select id="usage-key" value={key} onChange={(e) => setKey(e.currentTarget.value)}>
            <option value="">All keys</option>
            {keys.map((k) => (
              <option key={k.id} value={k.id}>
                {k.name} ({k.id})
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="usage-metric">Chart</label>
          <select
            id="usage-metric"
            value={metric}
            onChange={(e) => setMetric(e.currentTarget.value as UsageMetric)}
          >
            <option value="tokens">Tokens</option>
            <option value="requests">Requests</option>
            <option value="images">Images</option>
            {priced && <option value="cost">Cost</option>}
          </select>
        </div>
        <div class="field field-button">
          <button type="submit">Refresh</button>
        </div>
      </form>
      <ErrorNotice error={error} />
      {report && (
        <>
          <p class="summary" role="status" aria-label="Usage totals">
            {report.totals.requests} requests ·{' '}
            {report.totals.prompt_tokens + report.totals.completion_tokens} tokens (
            {report.totals.prompt_tokens} prompt, {report.totals.completion_tokens} completion) ·{' '}
            {report.totals.images} images · cost {formatMoney(report.totals.cost, currency)}
            {loadedAt && <span class="sub"> — read at {loadedAt.toLocaleTimeString()}</span>}
          </p>
          <UsageChart
            days={days}
            rows={rows}
            metric={metric === 'cost' && !priced ? 'tokens' : metric}
            currency={currency}
          />
          <div class="table-wrap">
            <table>
              <caption>Usage per key, model and day (UTC)</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Key</th>
                  <th scope="col">Model</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col" class="num">
                    Prompt tokens
                  </th>
                  <th scope="col" class="num">
                    Completion tokens
                  </th>
                  <th scope="col" class="num">
                    Images
                  </th>
                  <th scope="col" class="num">
                    Cost{currency ? ` (${currency})` : ''}
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.length === 0 && (
                  <tr>
                    <td colSpan={8}>No usage in this range.</td>
                  </tr>
                )}
                {[...rows]
                  .sort((a, b) => b.date.localeCompare(a.date) || valueOf(b, metric) - valueOf(a, metric))
                  .map((row) => (
                    <tr key={`${row.date}|${row.key_id}|${row.model}`}>
                      <td>{row.date}</td>
                      <td>{nameOf(row.key_id)}</td>
                      <td>{row.model}</td>
                      <td class="num">{row.requests}</td>
                      <td class="num">{row.prompt_tokens}</td>
                      <td class="num">{row.completion_tokens}</td>
                      <td class="num">{row.images}</td>
                      <td class="num">{formatMoney(row.cost)}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
