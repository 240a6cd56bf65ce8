import { IsInt, IsNumber, IsOptional, Max, Min } from 'class-validator';
import { expected } from './validation-message';

function compose(decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, key) => decorators.forEach((decorate) => decorate(target, key));
}

/** An optional finite number in [min, max]; every violation says the range and the value received. */
export function OptionalNumberIn(min: number, max: number): PropertyDecorator {
  const message = expected(`a number between ${min} and ${max}`);
  return compose([
    IsOptional(),
    IsNumber({ allowNaN: false, allowInfinity: false }, { message }),
    Min(min, { message }),
    Max(max, { message }),
  ]);
}

/** An optional integer in [min, max]. */
export function OptionalIntIn(
  min: number,
  max: number,
  what = `an integer between ${min} and ${max}`,
): PropertyDecorator {
  const message = expected(what);
  return compose([IsOptional(), IsInt({ message }), Min(min, { message }), Max(max, { message })]);
}
