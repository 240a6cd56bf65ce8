import type { BudgetSettings } from '../lib/budget.form';
import type { LimitSettings } from '../lib/key-settings.form';

interface Props<S extends LimitSettings> {
  idPrefix: string;
  settings: S;
  onChange: (settings: S) => void;
}

/** The scope, limits, priority, weight and budget a key and a team both have. */
export function LimitFields<S extends LimitSettings>({ idPrefix, settings, onChange }: Props<S>) {
  const set = (field: keyof LimitSettings) => (e: { currentTarget: { value: string } }) =>
    onChange({ ...settings, [field]: e.currentTarget.value });
  const number = (field: 'rpm' | 'tpm' | 'maxConcurrent' | 'weight', label: string) => (
    <div class="field">
      <label for={`${idPrefix}-${field}`}>{label}</label>
      <input
        id={`${idPrefix}-${field}`}
        type="number"
        min={1}
        max={field === 'weight' ? 100 : undefined}
        placeholder={field === 'weight' ? '1' : 'no limit'}
        value={settings[field]}
        onInput={set(field)}
      />
    </div>
  );
  return (
    <>
      <div class="field">
        <label for={`${idPrefix}-models`}>Models</label>
        <input
          id={`${idPrefix}-models`}
          type="text"
          placeholder="all models (or: sim-chat, sim-image)"
          value={settings.models}
          onInput={set('models')}
        />
      </div>
      <div class="field-row">
        {number('rpm', 'Requests per minute')}
        {number('tpm', 'Tokens per minute')}
        {number('maxConcurrent', 'Max concurrent')}
        {number('weight', 'Weight (1-100)')}
        <div class="field">
          <label for={`${idPrefix}-priority`}>Priority</label>
          <select id={`${idPrefix}-priority`} value={settings.priority} onChange={set('priority')}>
            <option value="high">high</option>
            <option value="normal">normal</option>
            <option value="low">low</option>
          </select>
        </div>
      </div>
      <BudgetFields
        idPrefix={idPrefix}
        budget={settings.budget}
        onChange={(budget) => onChange({ ...settings, budget })}
      />
    </>
  );
}

interface BudgetProps {
  idPrefix: string;
  budget: BudgetSettings;
  onChange: (budget: BudgetSettings) => void;
}

/** A spend and/or token limit over a UTC day, month or in total; both empty = no budget. */
function BudgetFields({ idPrefix, budget, onChange }: BudgetProps) {
  const set = (field: keyof BudgetSettings) => (e: { currentTarget: { value: string } }) =>
    onChange({ ...budget, [field]: e.currentTarget.value });
  const id = (field: string) => `${idPrefix}-budget-${field}`;
  return (
    <fieldset class="budget-fields">
      <legend>Budget (empty: none)</legend>
      <div class="field-row">
        <div class="field">
          <label for={id('spend')}>Budget spend</label>
          <input
            id={id('spend')}
            type="number"
            min={0}
            step="any"
            placeholder="no spend limit"
            value={budget.spend}
            onInput={set('spend')}
          />
        </div>
        <div class="field">
          <label for={id('currency')}>Currency</label>
          <input
            id={id('currency')}
            type="text"
            maxLength={3}
            placeholder="the catalog's (USD)"
            value={budget.currency}
            onInput={set('currency')}
          />
        </div>
        <div class="field">
          <label for={id('tokens')}>Budget tokens</label>
          <input
            id={id('tokens')}
            type="number"
            min={1}
            placeholder="no token limit"
            value={budget.tokens}
            onInput={set('tokens')}
          />
        </div>
        <div class="field">
          <label for={id('period')}>Budget period</label>
          <select id={id('period')} value={budget.period} onChange={set('period')}>
            <option value="day">per UTC day</option>
            <option value="month">per UTC month</option>
            <option value="total">in total</option>
          </select>
        </div>
        <div class="field">
          <label for={id('soft')}>Soft threshold (%)</label>
          <input
            id={id('soft')}
            type="number"
            min={0}
            max={100}
            placeholder="80"
            value={budget.softThreshold}
            onInput={set('softThreshold')}
          />
        </div>
      </div>
    </fieldset>
  );
}
