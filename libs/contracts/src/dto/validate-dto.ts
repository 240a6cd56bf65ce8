import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { GatewayError } from '../errors/gateway-error';
import { REQUEST_SIZE_CEILINGS, type RequestSizeLimits } from './request-size.limits';
import { withUnknownFields, type UnknownFields } from './unknown-fields';
import { describeValue } from './validation-message';

/** Type problems are reported before range problems: "expected a number" beats "must be at most 2". */
const CONSTRAINT_PRIORITY = [
  'whitelistValidation',
  'isArray',
  'isObject',
  'isString',
  'isNumber',
  'isInt',
  'isBoolean',
  'isIn',
  'nestedValidation',
];

function joinPath(parent: string, property: string): string {
  if (parent === '') return property;
  return /^\d+$/.test(property) ? `${parent}[${property}]` : `${parent}.${property}`;
}

function firstLeaf(
  errors: ValidationError[],
  parent: string,
): { path: string; error: ValidationError } | null {
  for (const error of errors) {
    const path = joinPath(parent, error.property);
    if (error.constraints && Object.keys(error.constraints).length > 0) return { path, error };
    const nested = firstLeaf(error.children ?? [], path);
    if (nested) return nested;
  }
  return null;
}

/** Turns class-validator's error tree into one OpenAI-style 400 naming the first offending parameter. */
export function toInvalidRequest(errors: ValidationError[]): GatewayError {
  const leaf = firstLeaf(errors, '');
  if (!leaf) return GatewayError.invalidRequest('The request body is invalid.');
  const constraints = leaf.error.constraints ?? {};
  const key = CONSTRAINT_PRIORITY.find((name) => name in constraints) ?? Object.keys(constraints)[0]!;
  if (key === 'whitelistValidation') {
    return GatewayError.invalidRequest(`Unrecognized request argument supplied: ${leaf.path}`, leaf.path);
  }
  if (key === 'isObject' && Array.isArray(leaf.error.value)) {
    // An `each` object check on a list: name the element, as nested validation does for other values.
    const items = leaf.error.value as unknown[];
    const index = items.findIndex((item) => typeof item !== 'object' || item === null || Array.isArray(item));
    if (index >= 0) {
      const path = `${leaf.path}[${index}]`;
      return GatewayError.invalidRequest(
        `Invalid '${path}': expected an object, got ${describeValue(items[index])}.`,
        path,
      );
    }
  }
  if (key === 'nestedValidation') {
    return GatewayError.invalidRequest(
      `Invalid '${leaf.path}': expected an object, got ${describeValue(leaf.error.value)}.`,
      leaf.path,
    );
  }
  return GatewayError.invalidRequest(`Invalid '${leaf.path}': ${constraints[key]}`, leaf.path);
}

/** Where a request breaks a rule that spans several fields; `param` is the exact path. */
export interface FieldProblem {
  param: string;
  message: string;
}

/** Optional static hooks of a DTO class; static, so plain objects of the DTO's shape still type-check. */
interface DtoClassHooks<T> {
  /**
   * Rules across fields (a `tool_choice` naming one of `tools`, …), checked once every field is valid on
   * its own, so they can rely on the types.
   */
  problemAcrossFields?(instance: T): FieldProblem | null;
  /**
   * Array bounds and sizes checked on the plain body before it is transformed: class-transformer and
   * class-validator cost grows with every element, so a body of 200,000 tiny messages must be refused by
   * its length, not after visiting them. A few length reads; nothing is allocated per element.
   */
  sizeProblem?(plain: object, limits: Readonly<RequestSizeLimits>): FieldProblem | null;
  /**
   * The (sub)class that validates this body: a lean one when the body has none of the rarer fields, or one
   * that leaves out of class-transformer and class-validator what this hook already found valid as sent.
   * Runs inside the read, so `unknownFieldsNow()` is its mode.
   */
  validationClassFor?(plain: object): ClassConstructor<T>;
  /**
   * Puts on the transformed instance the plain values class-transformer left out (`@Exclude`) because they
   * are checked as sent: copying them would cost an object per element. Runs before class-validator.
   */
  adoptPlainFields?(instance: T, plain: object): void;
}

/**
 * Validates untrusted plain data (an HTTP body, a job read back from Redis, a message of another process)
 * into a DTO instance. `limits` are the configured size bounds (the gateway's); without them the ceilings
 * apply (a worker reading a job some gateway already bounded). Unknown fields are refused (the HTTP edge,
 * as OpenAI does) or, with `unknownFields` 'drop', removed without a word (what a process reads from a
 * possibly newer one of the deployment, see `readVersionedDto`).
 */
export function validateDto<T extends object>(
  cls: ClassConstructor<T>,
  plain: unknown,
  limits: Readonly<RequestSizeLimits> = REQUEST_SIZE_CEILINGS,
  unknownFields: UnknownFields = 'refuse',
): T {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) {
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${describeValue(plain)}.`);
  }
  const hooks = cls as DtoClassHooks<T>;
  const sizeProblem = hooks.sizeProblem?.(plain, limits);
  if (sizeProblem) throw GatewayError.invalidRequest(sizeProblem.message, sizeProblem.param);
  return withUnknownFields(unknownFields, () => {
    const instance = plainToInstance(hooks.validationClassFor?.(plain) ?? cls, plain);
    hooks.adoptPlainFields?.(instance, plain);
    const errors = validateSync(instance, {
      whitelist: true,
      forbidNonWhitelisted: unknownFields === 'refuse',
      forbidUnknownValues: true,
      validationError: { target: false, value: true },
    });
    if (errors.length > 0) throw toInvalidRequest(errors);
    const problem = hooks.problemAcrossFields?.(instance);
    if (problem) throw GatewayError.invalidRequest(problem.message, problem.param);
    return instance;
  });
}
