import type { TeamView } from './admin.types';
import {
  changedFields,
  EMPTY_LIMITS,
  limitFieldsOf,
  limitSettingsOf,
  setFields,
  type LimitSettings,
} from './key-settings.form';

/** The editable settings of a team: its name, and the limits, scope and budget its keys share. */
export interface TeamSettings extends LimitSettings {
  name: string;
}

export const EMPTY_TEAM: TeamSettings = { ...EMPTY_LIMITS, name: '' };

export function teamSettingsOf(team: TeamView, currency = ''): TeamSettings {
  return { ...limitSettingsOf(team, currency), name: team.name };
}

const fieldsOf = (settings: TeamSettings) => ({ name: settings.name.trim(), ...limitFieldsOf(settings) });

/** `POST /admin/teams`: the fields that are set (absent = no limit). */
export function createTeamBody(settings: TeamSettings): Record<string, unknown> {
  return setFields(fieldsOf(settings));
}

/** `PATCH /admin/teams/:id`: only what the form changed, `null` where a field was emptied. */
export function updateTeamBody(before: TeamSettings, after: TeamSettings): Record<string, unknown> {
  return changedFields(fieldsOf(before), fieldsOf(after));
}
