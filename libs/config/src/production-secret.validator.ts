import { registerDecorator, type ValidationArguments } from 'class-validator';
import type { SharedConfig } from './shared.config';

/** Shortest API key or admin token accepted with NODE_ENV=production (e.g. `openssl rand -hex 32` gives 64). */
export const MIN_PRODUCTION_SECRET_LENGTH = 32;

/**
 * Values published in this repository's examples (`.env.example`, the README, example manifests) and
 * the words people type while they mean to come back later. A key anyone can read in a repository is no key.
 */
const KNOWN_PLACEHOLDERS = new Set([
  'sk-change-me-please',
  'sk-example-change-me',
  'sk-my-dev-key',
  'sk-gw-replace-with-a-random-key-of-32-chars-or-more',
]);
const PLACEHOLDER_WORDS =
  /change[-_ ]?me|changeit|example|placeholder|replace[-_ ]?(me|with)|your[-_ ]?(api[-_ ]?)?(key|token|secret)|dummy|insecure|not[-_ ]?a[-_ ]?secret|x{6,}|0{8,}|123456/i;
/** Fewer distinct characters than this in 32+ (`aaaa…`, `abab…`) is a pattern, not a random secret. */
const MIN_DISTINCT_CHARACTERS = 10;

/** Why `secret` cannot guard a production deployment, or null when it can. Never quotes the secret. */
export function weakSecretReason(secret: string): string | null {
  if (KNOWN_PLACEHOLDERS.has(secret) || PLACEHOLDER_WORDS.test(secret)) {
    return 'is a placeholder (an example value or a word like change-me/example/placeholder)';
  }
  if (secret.length < MIN_PRODUCTION_SECRET_LENGTH) {
    return `is ${secret.length} characters; NODE_ENV=production needs at least ${MIN_PRODUCTION_SECRET_LENGTH}`;
  }
  if (new Set(secret).size < MIN_DISTINCT_CHARACTERS) return 'is a repetitive pattern, not a random secret';
  return null;
}

const generateHint = 'generate one with `openssl rand -hex 32`';

/**
 * With NODE_ENV=production, refuses secrets that are short, known or patterned (one message per variable,
 * naming each weak entry by position). Other environments keep their convenience values. Entries that
 * already fail the variable's format are left to that check.
 */
export function StrongInProduction(name: string, format: RegExp): PropertyDecorator {
  const problemsOf = (value: unknown, args: ValidationArguments): string[] => {
    if (!(args.object as SharedConfig).isProduction) return [];
    const entries = Array.isArray(value) ? (value as unknown[]) : value === undefined ? [] : [value];
    return entries.flatMap((entry, index) => {
      if (typeof entry !== 'string' || !format.test(entry)) return [];
      const reason = weakSecretReason(entry);
      if (reason === null) return [];
      return [Array.isArray(value) ? `entry ${index + 1} of ${entries.length} ${reason}` : reason];
    });
  };
  return (target, propertyName) =>
    registerDecorator({
      name: 'strongInProduction',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown, args: ValidationArguments) => problemsOf(value, args).length === 0,
        defaultMessage: (args: ValidationArguments) =>
          `${name} ${problemsOf(args.value, args).join('; ')} (${generateHint})`,
      },
    });
}
