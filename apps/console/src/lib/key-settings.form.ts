import type { ApiKeyView, Priority, TeamView } from './admin.types';
import { budgetBodyOf, budgetSettingsOf, EMPTY_BUDGET, type BudgetSettings } from './budget.form';
import { utcDay } from './utc.days';

/** The settings keys and teams share, as the form holds them: text, where empty means no limit / all models. */
export interface LimitSettings {
  models: string;
  rpm: string;
  tpm: string;
  maxConcurrent: string;
  priority: Priority;
  /** Its share of a saturated model against other keys' or teams' (1-100); empty = 1. */
  weight: string;
  budget: BudgetSettings;
}

/** The editable settings of a key. */
export interface KeySettings extends LimitSettings {
  /** The last UTC day the key works (YYYY-MM-DD); empty = never expires. */
  expires: string;
  /** Its team's id; empty = none. */
  team: string;
}

export const EMPTY_LIMITS: LimitSettings = {
  models: '',
  rpm: '',
  tpm: '',
  maxConcurrent: '',
  priority: 'normal',
  weight: '',
  budget: EMPTY_BUDGET,
};

export const EMPTY_SETTINGS: KeySettings = { ...EMPTY_LIMITS, expires: '', team: '' };

export function limitSettingsOf(holder: ApiKeyView | TeamView, currency = ''): LimitSettings {
  const text = (value: number | null) => (value === null ? '' : String(value));
  return {
    models: (holder.models ?? []).join(', '),
    rpm: text(holder.rpm),
    tpm: text(holder.tpm),
    maxConcurrent: text(holder.max_concurrent),
    priority: holder.priority,
    weight: holder.weight === 1 ? '' : String(holder.weight),
    budget: budgetSettingsOf(holder.budget, currency),
  };
}

export function settingsOf(key: ApiKeyView, currency = ''): KeySettings {
  return {
    ...limitSettingsOf(key, currency),
    expires: key.expires_at === null ? '' : utcDay(key.expires_at * 1000),
    team: key.team_id ?? '',
  };
}

/** The admin API's value of each shared field; `null` is "no limit", "all models", "no budget". */
export function limitFieldsOf(settings: LimitSettings): Record<string, unknown> {
  const limit = (text: string) => (text.trim() === '' ? null : Number(text));
  const models = settings.models
    .split(/[\s,]+/)
    .map((m) => m.trim())
    .filter(Boolean);
  return {
    models: models.length > 0 ? models : null,
    rpm: limit(settings.rpm),
    tpm: limit(settings.tpm),
    max_concurrent: limit(settings.maxConcurrent),
    priority: settings.priority,
    weight: settings.weight.trim() === '' ? 1 : Number(settings.weight),
    budget: budgetBodyOf(settings.budget),
  };
}

/** The admin API's value of each field of a key; `null` also "never expires", "no team". */
function fieldsOf(settings: KeySettings): Record<string, unknown> {
  return {
    ...limitFieldsOf(settings),
    // The end of the chosen UTC day, in Unix seconds as the API takes them.
    expires_at: settings.expires ? Math.floor(Date.parse(`${settings.expires}T23:59:59Z`) / 1000) : null,
    team_id: settings.team === '' ? null : settings.team,
  };
}

/** The fields that are set (absent = no limit), as a create body takes them. */
export function setFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));
}

/** Only the fields whose value changed, `null` where one was emptied. */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(after).filter(([field, value]) => JSON.stringify(value) !== JSON.stringify(before[field])),
  );
}

/** `POST /admin/keys`: the fields that are set (absent = no limit). */
export function createBody(name: string, settings: KeySettings): Record<string, unknown> {
  return { name: name.trim(), ...setFields(fieldsOf(settings)) };
}

/**
 * `PATCH /admin/keys/:id`: only the fields the form changed, `null` where one was emptied — so saving new
 * limits of a key that expired never re-sends its (past, refused) expiry.
 */
export function updateBody(before: KeySettings, after: KeySettings): Record<string, unknown> {
  return changedFields(fieldsOf(before), fieldsOf(after));
}

export function limitsOf(holder: ApiKeyView | TeamView): string {
  const parts = [
    holder.rpm !== null && `${holder.rpm} rpm`,
    holder.tpm !== null && `${holder.tpm} tpm`,
    holder.max_concurrent !== null && `${holder.max_concurrent} at once`,
    'expires_at' in holder && holder.expires_at !== null && `until ${utcDay(holder.expires_at * 1000)}`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : 'none';
}
