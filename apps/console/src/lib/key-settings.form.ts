import type { ApiKeyView, Priority } from './admin.types';
import { utcDay } from './utc.days';

/** The editable settings of a key as the form holds them: text, where empty means no limit / all models. */
export interface KeySettings {
  models: string;
  rpm: string;
  tpm: string;
  maxConcurrent: string;
  priority: Priority;
  /** Its share of a saturated model against other keys' (1-100); empty = 1. */
  weight: string;
  /** The last UTC day the key works (YYYY-MM-DD); empty = never expires. */
  expires: string;
}

export const EMPTY_SETTINGS: KeySettings = {
  models: '',
  rpm: '',
  tpm: '',
  maxConcurrent: '',
  priority: 'normal',
  weight: '',
  expires: '',
};

export function settingsOf(key: ApiKeyView): KeySettings {
  const text = (value: number | null) => (value === null ? '' : String(value));
  return {
    models: (key.models ?? []).join(', '),
    rpm: text(key.rpm),
    tpm: text(key.tpm),
    maxConcurrent: text(key.max_concurrent),
    priority: key.priority,
    weight: key.weight === 1 ? '' : String(key.weight),
    expires: key.expires_at === null ? '' : utcDay(key.expires_at * 1000),
  };
}

/** The admin API's value of each field; `null` is "no limit", "all models", "never expires". */
function fieldsOf(settings: KeySettings): Record<string, unknown> {
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
    // The end of the chosen UTC day, in Unix seconds as the API takes them.
    expires_at: settings.expires ? Math.floor(Date.parse(`${settings.expires}T23:59:59Z`) / 1000) : null,
  };
}

/** `POST /admin/keys`: the fields that are set (absent = no limit). */
export function createBody(name: string, settings: KeySettings): Record<string, unknown> {
  const fields = Object.entries(fieldsOf(settings)).filter(([, value]) => value !== null);
  return { name: name.trim(), ...Object.fromEntries(fields) };
}

/**
 * `PATCH /admin/keys/:id`: only the fields the form changed, `null` where one was emptied — so saving new
 * limits of a key that expired never re-sends its (past, refused) expiry.
 */
export function updateBody(before: KeySettings, after: KeySettings): Record<string, unknown> {
  const old = fieldsOf(before);
  const changed = Object.entries(fieldsOf(after)).filter(
    ([field, value]) => JSON.stringify(value) !== JSON.stringify(old[field]),
  );
  return Object.fromEntries(changed);
}

export function limitsOf(key: ApiKeyView): string {
  const parts = [
    key.rpm !== null && `${key.rpm} rpm`,
    key.tpm !== null && `${key.tpm} tpm`,
    key.max_concurrent !== null && `${key.max_concurrent} at once`,
    key.expires_at !== null && `until ${utcDay(key.expires_at * 1000)}`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : 'none';
}
