import type { BudgetPeriod } from '../lib/admin.types';
import { formatMoney, type BudgetUse } from '../lib/spend.summary';

const PERIOD_NAMES: Record<BudgetPeriod, string> = {
  day: 'today (UTC)',
  month: 'this month (UTC)',
  total: 'in total',
};

const STATE_NAMES: Record<BudgetUse['state'], string> = {
  ok: 'within budget',
  warn: 'past the soft threshold',
  over: 'used up',
  unknown: 'spend not reported by this gateway',
};

interface Props {
  uses: BudgetUse[];
  period: BudgetPeriod;
  currency: string | null;
}

/**
 * What is left of a budget in its period, per limit: a bar of the share used, with the soft threshold
 * marked and the bar in the warning colour past it (the text says the same for everyone).
 */
export function BudgetMeter({ uses, period, currency }: Props) {
  const amount = (use: BudgetUse, value: number | null) =>
    use.kind === 'spend'
      ? formatMoney(value, currency)
      : value === null
        ? '—'
        : `${value.toLocaleString('en')} tokens`;
  return (
    <ul class="budget-meter" aria-label="Budget left">
      {uses.map((use) => (
        <li key={use.kind} class={`budget-${use.state}`}>
          <div>
            <strong>{use.kind === 'spend' ? 'Spend' : 'Tokens'}</strong> {PERIOD_NAMES[period]}:{' '}
            {amount(use, use.used)} used of {amount(use, use.limit)} ·{' '}
            <strong>{amount(use, use.left)} left</strong> ·{' '}
            <span class="budget-state">{STATE_NAMES[use.state]}</span>
          </div>
          <svg width="100%" height="14" viewBox="0 0 100 14" preserveAspectRatio="none" aria-hidden="true">
            <rect class="meter-track" x="0" y="2" width="100" height="10" />
            {use.share !== null && (
              <rect class="meter-used" x="0" y="2" width={Math.min(100, use.share * 100)} height="10" />
            )}
            <line
              class="meter-threshold"
              x1={use.softThreshold * 100}
              x2={use.softThreshold * 100}
              y1="0"
              y2="14"
            />
          </svg>
          <div class="sub">soft threshold at {Math.round(use.softThreshold * 100)} %</div>
        </li>
      ))}
    </ul>
  );
}
