import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import { GatewayError } from '@mgw/contracts';
import { FileCatalog } from '@mgw/files';
import { nextBatchStep } from './batch-status.machine';
import { BatchRunner } from './batch.runner';
import { BATCH_ENDPOINTS, COMPLETION_WINDOW, type BatchEndpoint, type BatchObject } from './batch.types';
import { BatchStore, type NewBatch } from './store/batch.store';

/** OpenAI's list of batches. */
export interface BatchList {
  object: 'list';
  data: BatchObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

const CREATE_FIELDS = new Set([
  'input_file_id',
  'endpoint',
  'completion_window',
  'metadata',
  'output_expires_after',
]);
const METADATA_MAX_KEYS = 16;
const METADATA_KEY_MAX = 64;
const METADATA_VALUE_MAX = 512;

const invalid = (message: string, param: string | null, code: string | null = null): GatewayError =>
  GatewayError.invalidRequest(message, param, code);

export function batchNotFound(batchId: string): GatewayError {
  return new GatewayError(404, 'invalid_request_error', null, `No batch found with id '${batchId}'.`, null);
}

/** `POST /v1/batches`'s body, checked field by field as OpenAI does. */
export function readCreateBatch(body: unknown): NewBatch {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('The body must be a JSON object.', null);
  }
  const fields = body as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!CREATE_FIELDS.has(name)) throw invalid(`Unrecognized request argument supplied: ${name}`, name);
  }
  const { input_file_id: inputFileId, endpoint, completion_window: window, metadata } = fields;
  if (typeof inputFileId !== 'string' || inputFileId === '') {
    throw invalid(
      "Missing required parameter: 'input_file_id'.",
      'input_file_id',
      'missing_required_parameter',
    );
  }
  if (typeof endpoint !== 'string' || !(BATCH_ENDPOINTS as readonly string[]).includes(endpoint)) {
    throw invalid(
      `Invalid value for 'endpoint': expected one of ${BATCH_ENDPOINTS.map((e) => `'${e}'`).join(', ')}.`,
      'endpoint',
      'invalid_value',
    );
  }
  if (window !== COMPLETION_WINDOW) {
    throw invalid(
      `Invalid value for 'completion_window': only '${COMPLETION_WINDOW}' is supported.`,
      'completion_window',
      'invalid_value',
    );
  }
  return { inputFileId, endpoint: endpoint as BatchEndpoint, metadata: readMetadata(metadata) };
}

function readMetadata(metadata: unknown): Record<string, string> | null {
  if (metadata === undefined || metadata === null) return null;
  if (typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw invalid("Invalid type for 'metadata': expected an object.", 'metadata', 'invalid_type');
  }
  const entries = Object.entries(metadata as Record<string, unknown>);
  if (entries.length > METADATA_MAX_KEYS) {
    throw invalid(`Invalid 'metadata': at most ${METADATA_MAX_KEYS} keys.`, 'metadata', 'invalid_value');
  }
  for (const [key, value] of entries) {
    if (key.length > METADATA_KEY_MAX) {
      throw invalid(
        `Invalid 'metadata': keys are at most ${METADATA_KEY_MAX} characters.`,
        'metadata',
        'invalid_value',
      );
    }
    if (typeof value !== 'string' || value.length > METADATA_VALUE_MAX) {
      throw invalid(
        `Invalid 'metadata.${key}': values are strings of at most ${METADATA_VALUE_MAX} characters.`,
        `metadata.${key}`,
        'invalid_value',
      );
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** The Batch API's routes over the store, the files and this gateway's runner. */
@Injectable()
export class BatchesService {
  constructor(
    @Inject(BatchStore) private readonly store: BatchStore,
    @Inject(FileCatalog) private readonly files: FileCatalog,
    @Inject(BatchRunner) private readonly runner: BatchRunner,
  ) {}

  async create(principal: Principal, body: unknown): Promise<BatchObject> {
    const spec = readCreateBatch(body);
    const file = await this.files.get(principal.keyId, spec.inputFileId);
    if (file === undefined) {
      throw invalid(`No such File object: ${spec.inputFileId}`, 'input_file_id', 'invalid_file');
    }
    if (file.purpose !== 'batch') {
      throw invalid(
        `The file ${spec.inputFileId} has purpose '${file.purpose}'; a batch's input file must have purpose 'batch'.`,
        'input_file_id',
        'invalid_file',
      );
    }
    const batch = await this.store.create(principal, spec);
    this.runner.claim();
    return batch;
  }

  async retrieve(principal: Principal, batchId: string): Promise<BatchObject> {
    const record = await this.store.get(principal.keyId, batchId);
    if (record === undefined) throw batchNotFound(batchId);
    return record.batch;
  }

  /** Moves the batch to `cancelling` (its driver writes what it has and ends it `cancelled`). */
  async cancel(principal: Principal, batchId: string): Promise<BatchObject> {
    for (;;) {
      const record = await this.store.get(principal.keyId, batchId);
      if (record === undefined) throw batchNotFound(batchId);
      const { batch } = record;
      if (batch.status === 'cancelling' || batch.status === 'cancelled') return batch;
      const next = nextBatchStep(batch.status, { type: 'cancel' });
      if (next === null) {
        throw new GatewayError(
          409,
          'invalid_request_error',
          null,
          `Cannot cancel a batch with status '${batch.status}'.`,
          null,
        );
      }
      if (await this.store.move(batchId, batch.status, next.status, { ending: 'cancelled' })) {
        this.runner.cancelled(batchId);
        return (await this.store.get(principal.keyId, batchId))?.batch ?? batch;
      }
    }
  }

  async list(principal: Principal, after: string | undefined, limit: number): Promise<BatchList> {
    const page = await this.store.list(principal.keyId, after, limit);
    return {
      object: 'list',
      data: page.data,
      first_id: page.data[0]?.id ?? null,
      last_id: page.data.at(-1)?.id ?? null,
      has_more: page.hasMore,
    };
  }
}
