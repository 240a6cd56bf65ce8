import { Expose, Transform } from 'class-transformer';
import { IsBoolean, IsInt, Max, Min } from 'class-validator';

/** Env values arrive as strings; these turn them into typed values, leaving garbage for the validators to name. */
export const ToInt = () =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value,
  );

export const ToBool = () =>
  Transform(({ value }: { value: unknown }) => {
    if (typeof value !== 'string') return value;
    const v = value.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
    return value;
  });

export const ToList = () =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item.length > 0)
      : value,
  );

export const Trimmed = () =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

/** An integer env variable with its bounds; one message names the variable and the allowed range. */
export function EnvInt(name: string, min: number, max?: number): PropertyDecorator {
  const message =
    max === undefined
      ? `${name} must be an integer of at least ${min}`
      : `${name} must be an integer between ${min} and ${max}`;
  const decorators = [
    Expose({ name }),
    ToInt(),
    IsInt({ message }),
    Min(min, { message }),
    ...(max === undefined ? [] : [Max(max, { message })]),
  ];
  return (target, key) => decorators.forEach((decorate) => decorate(target, key));
}

export function EnvBool(name: string): PropertyDecorator {
  const decorators = [Expose({ name }), ToBool(), IsBoolean({ message: `${name} must be true or false` })];
  return (target, key) => decorators.forEach((decorate) => decorate(target, key));
}
