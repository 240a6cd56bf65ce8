import type { CatalogPricing } from '../pricing/model-pricing';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { MODEL_TYPES, type ModelType } from '../model-types';
import type { UrlInputPolicy } from '../urls/url-policy';

export class ServedModelDto {
  @MaxLength(256)
  @MinLength(1)
  @IsString()
  id!: string;

  @IsIn(MODEL_TYPES)
  type!: ModelType;

  @MaxLength(256)
  @MinLength(1)
  @IsString()
  owned_by!: string;

  /**
   * False while the worker cannot serve the model (every upstream of its backend is out of service in the
   * worker's view); absent means ready. Sent with every heartbeat, and at once when it changes.
   */
  @IsBoolean()
  @IsOptional()
  ready?: boolean;
}

/**
 * What a worker says about itself; the registry validates it like any other untrusted input, by the
 * registry protocol's rules (`readVersionedDto`): a newer version refused, fields it does not know dropped.
 * Written without `v` while that protocol is at version 1 (see protocol-version.ts).
 */
export class WorkerHeartbeatDto {
  @Matches(/^[A-Za-z0-9_.:-]{1,128}$/)
  instanceId!: string;

  @ValidateNested({ each: true })
  @Type(() => ServedModelDto)
  @ArrayUnique((model: ServedModelDto) => model.id, { message: 'models must not list a model twice' })
  @ArrayMaxSize(256)
  @ArrayMinSize(1)
  @IsArray()
  models!: ServedModelDto[];

  @Max(100_000)
  @Min(1)
  @IsInt()
  concurrency!: number;

  @MaxLength(256)
  @IsString()
  hostname!: string;

  @Min(0)
  @IsInt()
  startedAt!: number;
}

export class WorkerDeregistrationDto {
  @Matches(/^[A-Za-z0-9_.:-]{1,128}$/)
  instanceId!: string;
}

export class ModelLookupRequestDto {
  @MaxLength(256)
  @IsString()
  id!: string;
}

/** A model as the registry knows it: declared in the catalog, with its live capacity. */
export interface ModelEntry {
  id: string;
  /** The catalog's prices of the model, in its currency; absent: the model costs 0. */
  pricing?: CatalogPricing;
  type: ModelType;
  owned_by: string;
  created: number;
  liveWorkers: number;
  /** Live workers that can serve the model now (their heartbeat did not say `ready: false`). */
  readyWorkers: number;
  concurrency: number;
  /**
   * Set for models declared `scaleToZero` in the catalog: with no live worker, a request is queued and
   * waits up to `maxWaitMs` for one to start (an autoscaler watches the queue) instead of a 503 at once.
   */
  scaleToZero?: { maxWaitMs: number };
  /** The catalog's bound on waiting jobs; absent when the catalog sets none. */
  maxQueueDepth?: number;
  /**
   * Chat models declared in the catalog: the OpenAI request parameters the model's backend honours
   * (`supportedChatParametersOf` in contracts). Absent for image models and undeclared models.
   */
  supportedParameters?: string[];
  /** The catalog's context window in tokens; absent when the catalog sets none. */
  contextTokens?: number;
  /** Embedding models: the length of the vectors the model gives (a request may ask for fewer). */
  dimensions?: number;
  /**
   * The catalog's fallbacks: models of the same type that serve this model's requests, in order, when it
   * cannot. Absent when the catalog declares none. Never part of the wire `Model` object.
   */
  fallbacks?: string[];
  /**
   * The catalog's default for resuming this model's streams (`x-stream-resume` of a request wins): 'on'
   * keeps a stream's job running for the resume grace when its client leaves. Absent: 'off'.
   */
  streamResume?: StreamResumeDefault;
  /**
   * The catalog's other names for the model: a lookup by one of them answers this entry, and the models
   * list shows each as a model of its own. Absent when the catalog declares none.
   */
  aliases?: string[];
  /**
   * The catalog's policy for URLs in a request's parts (`urlInputs`): which the gateway lets through to the
   * model's upstream. Absent: `public`.
   */
  urlInputs?: UrlInputPolicy;
}

export type ModelLookup =
  { state: 'live'; model: ModelEntry } | { state: 'unavailable'; model: ModelEntry } | { state: 'unknown' };

/** A model's default for resuming its streams. */
export type StreamResumeDefault = 'on' | 'off';
export const STREAM_RESUME_DEFAULTS: readonly StreamResumeDefault[] = ['on', 'off'];
