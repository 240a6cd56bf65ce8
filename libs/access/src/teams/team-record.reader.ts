import {
  DEFAULT_TENANT_WEIGHT,
  FailFast,
  RecordReader,
  TEAM_ID_PATTERN,
  TENANT_WEIGHT_MAX,
  TENANT_WEIGHT_MIN,
  type FieldRecord,
} from '@mgw/contracts';
import { PRIORITY_TIERS } from '../admin-api.types';
import { readStoredBudget } from '../budgets/budget.dto';
import type { TeamRecord } from './team.record';

const FIELDS: readonly (keyof TeamRecord)[] = [
  'id',
  'name',
  'createdAt',
  'models',
  'rpm',
  'tpm',
  'maxConcurrent',
  'priority',
  'weight',
  'budget',
];
const NAME_MAX = 128;

/** A team record read back from Redis that cannot be trusted: its keys authenticate nobody. */
export class InvalidTeamRecordError extends Error {
  override readonly name = 'InvalidTeamRecordError';
}

const read = new RecordReader(
  new FailFast((message) => new InvalidTeamRecordError(`team record: ${message}`)),
);

function nullableInt(record: FieldRecord, field: string): number | null {
  const value = record[field];
  return value === undefined || value === null ? null : read.optionalInt(record, field, { min: 1 }, 1);
}

function nullableStrings(record: FieldRecord, field: string): string[] | null {
  const value = record[field];
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    read.report(`${field} must be an array of strings`);
  return [...(value as string[])];
}

/** A team record as stored in Redis (JSON): every field checked, unknown fields refused. */
export function readTeamRecord(value: unknown): TeamRecord {
  const record = read.record(value, 'team record');
  read.onlyFields(record, FIELDS, 'is not a field of a team record');
  const id = read.string(record, 'id');
  if (!TEAM_ID_PATTERN.test(id)) read.report(`id must match ${String(TEAM_ID_PATTERN)}`);
  const name = read.string(record, 'name');
  if (name.length < 1 || name.length > NAME_MAX) read.report(`name must be 1 to ${NAME_MAX} characters long`);
  return {
    id,
    name,
    createdAt: read.natural(record, 'createdAt'),
    models: nullableStrings(record, 'models'),
    rpm: nullableInt(record, 'rpm'),
    tpm: nullableInt(record, 'tpm'),
    maxConcurrent: nullableInt(record, 'maxConcurrent'),
    priority: read.oneOf(record, 'priority', PRIORITY_TIERS, 'normal'),
    weight: read.optionalInt(
      record,
      'weight',
      { min: TENANT_WEIGHT_MIN, max: TENANT_WEIGHT_MAX },
      DEFAULT_TENANT_WEIGHT,
    ),
    budget: readStoredBudget(record, (message) => new InvalidTeamRecordError(`team record: ${message}`)),
  };
}
