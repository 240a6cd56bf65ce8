import { Writable } from 'node:stream';
import pino from 'pino';
import { pinoLevelOf, pinoOptionsFor } from './pino.options';
import { PinoLoggerService } from './pino-logger.service';
import { apiKeyFingerprint, authorizationFingerprint, promptFields } from './redaction';

function capture(level: 'log' | 'debug' = 'debug') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const logger = new PinoLoggerService(pino(pinoOptionsFor('spec', level), stream));
  return { logger, lines };
}

describe('log redaction', () => {
  it('fingerprints a key as the first 8 hex digits of its SHA-256', () => {
    expect(apiKeyFingerprint('sk-test')).toMatch(/^[0-9a-f]{8}$/);
    expect(apiKeyFingerprint('sk-test')).toBe(apiKeyFingerprint('sk-test'));
    expect(apiKeyFingerprint('sk-test')).not.toBe(apiKeyFingerprint('sk-other'));
    expect(authorizationFingerprint('Bearer sk-test')).toBe(apiKeyFingerprint('sk-test'));
    expect(authorizationFingerprint('Basic abc')).toBeUndefined();
    expect(authorizationFingerprint(undefined)).toBeUndefined();
  });

  it('keeps prompts out unless asked, logging only their size', () => {
    const chat = { messages: [{ role: 'user', content: 'my secret plan' }] };
    expect(JSON.stringify(promptFields(chat, false))).not.toContain('secret');
    expect(promptFields(chat, false)).toEqual({ promptChars: JSON.stringify(chat.messages).length });
    expect(promptFields(chat, true)).toEqual({ messages: chat.messages });
    expect(promptFields({ prompt: 'a cat' }, true)).toEqual({ prompt: 'a cat' });
    expect(promptFields(null, true)).toEqual({});
  });

  it('blanks authorization headers and keys wherever they are logged', () => {
    const { logger, lines } = capture();
    logger.log({
      msg: 'dump',
      headers: { authorization: 'Bearer sk-live-secret' },
      apiKey: 'sk-live-secret',
    });
    expect(JSON.stringify(lines)).not.toContain('sk-live-secret');
    expect(lines[0]).toMatchObject({ headers: { authorization: '[redacted]' }, apiKey: '[redacted]' });
  });

  it('blanks the arguments of a Redis command in a logged error (a refused HELLO carries the password)', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('WRONGPASS invalid username-password pair'), {
      command: { name: 'hello', args: ['3', 'AUTH', 'default', 'redis-secret-pw'] },
    });
    logger.error({ msg: 'redis failed', err: error });
    expect(JSON.stringify(lines)).not.toContain('redis-secret-pw');
    expect(JSON.stringify(lines)).toContain('hello');
  });
});

describe('PinoLoggerService', () => {
  it('writes JSON lines with the level name, the app and the Nest context', () => {
    const { logger, lines } = capture();
    logger.log('hello', 'Registry');
    logger.error('broke', 'Error: broke\n    at x', 'Worker');
    expect(lines[0]).toMatchObject({ level: 'info', app: 'spec', context: 'Registry', msg: 'hello' });
    expect(lines[1]).toMatchObject({ level: 'error', context: 'Worker', msg: 'broke' });
    expect(lines[1]!.stack).toContain('at x');
  });

  it("merges a line's own fields, such as its requestId, into that line only", () => {
    const { logger, lines } = capture();
    logger.debug({ msg: 'job started', requestId: 'req-12345678', model: 'sim-chat' });
    logger.log('job done');
    expect(lines[0]).toMatchObject({ requestId: 'req-12345678', model: 'sim-chat', msg: 'job started' });
    expect(lines[1]).toMatchObject({ msg: 'job done' });
    expect(lines[1]).not.toHaveProperty('requestId');
    expect(lines[1]).not.toHaveProperty('model');
  });

  it('honours LOG_LEVEL in Nest names', () => {
    const { logger, lines } = capture('log');
    logger.debug('hidden');
    logger.verbose('hidden');
    logger.warn('shown');
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
    expect(pinoLevelOf('verbose')).toBe('trace');
    expect(pinoLevelOf('log')).toBe('info');
  });
});
