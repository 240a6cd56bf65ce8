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
import type { ApiKeyRecord } from './api-key.record';

const FIELDS: readonly (keyof ApiKeyRecord)[] = [
  'id',
  'name',
  'hash',
  'prefix',
  'createdAt',
  'expiresAt',
  'models',
  'rpm',
  'tpm',
  'maxConcurrent',
  'priority',
  'weight',
  'disabled',
  'revokedAt',
  'teamId',
  'budget',
];
const NAME_MAX = 128;

/** A record read back from Redis that cannot be trusted: it authenticates nobody and lists as nothing. */
export class InvalidKeyRecordError extends Error {
  override readonly name = 'InvalidKeyRecordError';
}

/** Fail-fast: the first problem rejects the whole record. */
const read = new RecordReader(new FailFast((message) => new InvalidKeyRecordError(`key record: ${message}`)));

function matching(record: FieldRecord, field: string, pattern: RegExp): string {
  const value = read.string(record, field);
  if (!pattern.test(value)) read.report(`${field} must match ${String(pattern)}`);
  return value;
}

/** An integer of at least `min`, or null when absent or null. */
function nullableInt(record: FieldRecord, field: string, min: number): number | null {
  const value = record[field];
  return value === undefined || value === null ? null : read.optionalInt(record, field, { min }, min);
}

function nullableStrings(record: FieldRecord, field: string): string[] | null {
  const value = record[field];
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    read.report(`${field} must be an array of strings`);
  return [...(value as string[])];
}

function teamIdOf(record: FieldRecord): string | null {
  const value = record.teamId;
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !TEAM_ID_PATTERN.test(value)) read.report('teamId must be a team id');
  return value as string;
}

/**
 * A key record as stored in Redis (JSON), read like any untrusted input: every field checked, unknown
 * fields refused. Throws `InvalidKeyRecordError` naming the first problem.
 */
export function readApiKeyRecord(value: unknown): ApiKeyRecord {
  const record = read.record(value, 'key record');
  read.onlyFields(record, FIELDS, 'is not a field of a key record');
  const name = read.string(record, 'name');
  if (name.length < 1 || name.length > NAME_MAX) read.report(`name must be 1 to ${NAME_MAX} characters long`);
  const disabled = record.disabled;
  if (typeof disabled !== 'boolean') read.report('disabled must be a boolean');
  return {
    id: matching(record, 'id', /^key_[0-9a-f]{24}$/),
    name,
    hash: matching(record, 'hash', /^[0-9a-f]{64}$/),
    prefix: matching(record, 'prefix', /^sk-gw-[A-Za-z0-9_-]{4}$/),
    createdAt: read.natural(record, 'createdAt'),
    expiresAt: nullableInt(record, 'expiresAt', 0),
    models: nullableStrings(record, 'models'),
    rpm: nullableInt(record, 'rpm', 1),
    tpm: nullableInt(record, 'tpm', 1),
    maxConcurrent: nullableInt(record, 'maxConcurrent', 1),
    priority: read.oneOf(record, 'priority', PRIORITY_TIERS, 'normal'),
    weight: read.optionalInt(
      record,
      'weight',
      { min: TENANT_WEIGHT_MIN, max: TENANT_WEIGHT_MAX },
      DEFAULT_TENANT_WEIGHT,
    ),
    disabled: disabled as boolean,
    revokedAt: nullableInt(record, 'revokedAt', 0),
    teamId: teamIdOf(record),
    budget: readStoredBudget(record, (message) => new InvalidKeyRecordError(`key record: ${message}`)),
  };
}
