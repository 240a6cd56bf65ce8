import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Type } from 'class-transformer';
import {
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
  ValidateNested,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { plainToInstance } from 'class-transformer';
import { modelTypeOf, type ModelKind, type ModelType } from '@mgw/contracts';
import { ConfigError } from './load-config';

/** Backend settings are opaque here: each backend validates its own options (its quirks stay inside it). */
export interface BackendSpec {
  kind: string;
  [option: string]: unknown;
}

/** A model that may have no worker at all while idle (an autoscaler starts one when its queue fills). */
export interface ScaleToZeroSpec {
  /** How long a request waits in the queue for a worker to start before `503 model_unavailable`. */
  maxWaitMs: number;
}

export const DEFAULT_SCALE_TO_ZERO_MAX_WAIT_MS = 120_000;

export interface CatalogModel {
  id: string;
  kind: ModelKind;
  type: ModelType;
  ownedBy: string;
  created: number;
  backend: BackendSpec;
  /** Present only for models declared `scaleToZero`. */
  scaleToZero?: ScaleToZeroSpec;
  /** Jobs allowed to wait in this model's queue before the gateway answers 503 `overloaded`. */
  maxQueueDepth?: number;
}

export interface Catalog {
  path: string;
  models: CatalogModel[];
}

class ScaleToZeroDto {
  @IsOptional()
  @Max(3_600_000, { message: 'maxWaitMs must be an integer between 1 and 3600000' })
  @Min(1, { message: 'maxWaitMs must be an integer between 1 and 3600000' })
  @IsInt({ message: 'maxWaitMs must be an integer between 1 and 3600000' })
  maxWaitMs?: number;
}

class CatalogModelDto {
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/, {
    message: 'id must start with a letter or digit and use only A-Z a-z 0-9 . _ : / @ + -',
  })
  @MaxLength(256)
  @IsString()
  id!: string;

  @IsIn(['chat', 'image'], { message: "type must be 'chat' or 'image'" })
  type!: ModelKind;

  @MaxLength(256)
  @MinLength(1)
  @IsString()
  owned_by!: string;

  @IsOptional()
  @Min(0)
  @IsInt()
  created?: number;

  @IsObject({ message: 'backend must be an object with a "kind"' })
  backend!: BackendSpec;

  @IsOptional()
  @ValidateNested()
  @Type(() => ScaleToZeroDto)
  @IsObject({ message: 'scaleToZero must be an object such as {"maxWaitMs": 120000}' })
  scaleToZero?: ScaleToZeroDto;
  @ValidateIf((model: CatalogModelDto) => model.maxQueueDepth !== undefined)
  @Min(1, { message: 'maxQueueDepth must be an integer of at least 1' })
  @IsInt({ message: 'maxQueueDepth must be an integer of at least 1' })
  maxQueueDepth?: number;
}

class CatalogFileDto {
  @ValidateNested({ each: true })
  @Type(() => CatalogModelDto)
  @ArrayMinSize(1, { message: 'models must list at least one model' })
  @IsArray({ message: 'models must be an array' })
  models!: CatalogModelDto[];
}

function describe(errors: ValidationError[], models: unknown[], prefix = ''): string[] {
  return errors.flatMap((error) => {
    const isIndex = /^\d+$/.test(error.property);
    let name = prefix
      ? isIndex
        ? `${prefix}[${error.property}]`
        : `${prefix}.${error.property}`
      : error.property;
    if (isIndex && prefix === 'models') {
      const entry = models[Number(error.property)] as { id?: unknown } | undefined;
      if (typeof entry?.id === 'string') name += ` (model "${entry.id}")`;
    }
    const own = Object.values(error.constraints ?? {}).map((m) => `${name}: ${m}`);
    return [...own, ...describe(error.children ?? [], models, name)];
  });
}

/** Parses and checks a catalog document; every problem names the model and the field. */
export function parseCatalog(text: string, path: string): Catalog {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`catalog ${path}: not valid JSON (${(error as Error).message})`]);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError([`catalog ${path}: expected an object with a "models" array`]);
  }
  const dto = plainToInstance(CatalogFileDto, raw);
  const errors = validateSync(dto, {
    whitelist: true,
    forbidNonWhitelisted: true,
    validationError: { target: false },
  });
  const entries: unknown[] = Array.isArray(dto.models) ? dto.models : [];
  const problems = describe(errors, entries).map((p) => `catalog ${path}: ${p}`);
  if (problems.length === 0) {
    // Only reached once every entry is an object with a string id and an object backend.
    const seen = new Set<string>();
    dto.models.forEach((model, index) => {
      if (typeof model.backend.kind !== 'string' || model.backend.kind.length === 0) {
        problems.push(
          `catalog ${path}: models[${index}] (model "${model.id}"): backend.kind must be a non-empty string`,
        );
      }
      if (seen.has(model.id)) problems.push(`catalog ${path}: model "${model.id}" is declared twice`);
      seen.add(model.id);
    });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const loadedAt = Math.floor(Date.now() / 1000);
  return {
    path,
    models: dto.models.map((m) => ({
      id: m.id,
      kind: m.type,
      type: modelTypeOf(m.type),
      ownedBy: m.owned_by,
      created: m.created ?? loadedAt,
      backend: m.backend,
      ...(m.scaleToZero
        ? { scaleToZero: { maxWaitMs: m.scaleToZero.maxWaitMs ?? DEFAULT_SCALE_TO_ZERO_MAX_WAIT_MS } }
        : {}),
      ...(m.maxQueueDepth === undefined ? {} : { maxQueueDepth: m.maxQueueDepth }),
    })),
  };
}

export async function loadCatalog(path: string): Promise<Catalog> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError([
      `CATALOG_PATH: cannot read ${absolute} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
  return parseCatalog(text, path);
}
