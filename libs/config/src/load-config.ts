import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { withDeprecatedEnv } from './deprecated-env';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function flatten(errors: ValidationError[], prefix = ''): string[] {
  return errors.flatMap((error) => {
    const name = prefix ? `${prefix}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => `${name}: ${message}`);
    return [...own, ...flatten(error.children ?? [], name)];
  });
}

/**
 * Reads the environment once into a typed, validated config object. Every problem is reported at once,
 * so an operator fixes a broken deployment in one pass instead of one crash per variable.
 * Config classes map env names with `@Expose({ name: 'ENV_NAME' })` and keep defaults as initializers.
 * Renamed variables are still read under their old names, with a warning (deprecated-env.ts).
 */
export function loadConfig<T extends object>(cls: ClassConstructor<T>, env: NodeJS.ProcessEnv): T {
  const config = plainToInstance(cls, withDeprecatedEnv(env), {
    excludeExtraneousValues: true,
    exposeDefaultValues: true,
  });
  const errors = validateSync(config, {
    forbidUnknownValues: true,
    validationError: { target: false, value: true },
  });
  // Several constraints of one variable often share a message; say it once.
  if (errors.length > 0) throw new ConfigError([...new Set(flatten(errors))]);
  return config;
}
