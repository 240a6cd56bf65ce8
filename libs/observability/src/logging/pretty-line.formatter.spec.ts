import { Writable } from 'node:stream';
import pino from 'pino';
import { loadGatewayConfig, loadWorkerConfig } from '@mgw/config';
import { pinoOptionsFor } from './pino.options';
import { PinoLoggerService } from './pino-logger.service';
import { chooseLogFormat, formatPrettyLine } from './pretty-line.formatter';

/** A logger as the apps build it, writing pretty lines into an array. */
function prettyLogger(): { logger: PinoLoggerService; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(formatPrettyLine(chunk.toString()));
      done();
    },
  });
  return { logger: new PinoLoggerService(pino(pinoOptionsFor('gateway', 'debug'), sink)), lines };
}

describe('chooseLogFormat', () => {
  it.each([
    [undefined, false, true, 'pretty'],
    [undefined, false, false, 'json'],
    [undefined, true, true, 'json'],
    [undefined, true, false, 'json'],
    ['json', false, true, 'json'],
    ['pretty', false, false, 'pretty'],
    ['pretty', true, false, 'pretty'],
  ] as const)('LOG_FORMAT=%p, production %p, TTY %p → %p', (setting, production, tty, expected) => {
    expect(chooseLogFormat(setting, production, tty)).toBe(expected);
  });

  it('reads LOG_FORMAT through the validated config, and refuses anything else', () => {
    expect(loadGatewayConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadGatewayConfig({ LOG_FORMAT: ' JSON ' }).logFormat).toBe('json');
    expect(loadGatewayConfig({ LOG_FORMAT: '' }).logFormat).toBeUndefined();
    expect(loadWorkerConfig({ LOG_FORMAT: 'pretty' }, 'chat').logFormat).toBe('pretty');
    expect(() => loadGatewayConfig({ LOG_FORMAT: 'yaml' })).toThrow('LOG_FORMAT must be one of json, pretty');
  });
});

describe('formatPrettyLine', () => {
  it('writes time, level, app, context and message on one short line', () => {
    const line = formatPrettyLine(
      '{"level":"info","time":"2026-11-23T16:20:01.123Z","app":"registry","pid":42,"context":"NestApplication","msg":"Nest application successfully started"}\n',
    );
    expect(line).toBe(
      '16:20:01.123 INFO  registry [NestApplication] Nest application successfully started\n',
    );
  });

  it('turns an access-log line into a request phrase and keeps a few fields', () => {
    const { logger, lines } = prettyLogger();
    logger.pino.warn(
      {
        requestId: 'abc123',
        req: { method: 'POST', path: '/v1/chat/completions' },
        res: { status: 429 },
        durationMs: 3.25,
        keyFingerprint: '0a1b2c3d',
      },
      'request completed',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} WARN {2}gateway request completed POST \/v1\/chat\/completions 429 3\.3ms requestId=abc123 keyFingerprint=0a1b2c3d\n$/,
    );
  });

  it('never shows what the JSON redacted', () => {
    const { logger, lines } = prettyLogger();
    logger.pino.info({ authorization: 'Bearer sk-secret-key', apiKey: 'sk-secret-key' }, 'headers');
    expect(lines[0]).not.toContain('sk-secret-key');
    expect(lines[0]).toContain('authorization=[redacted]');
  });

  it('cuts long values and many fields short, and quotes values with spaces', () => {
    const fields = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`f${i}`, i]));
    const line = formatPrettyLine(
      JSON.stringify({
        level: 'debug',
        time: 0,
        app: 'a',
        msg: 'm',
        long: 'x'.repeat(500),
        note: 'two words',
        ...fields,
      }),
    );
    expect(line.split('\n')).toHaveLength(2);
    expect(line).toContain(`long=${'x'.repeat(79)}…`);
    expect(line).toContain('note="two words"');
    expect(line).toContain('(+5 more)');
    expect(line.length).toBeLessThan(250);
  });

  it('shows the stack of an error under its line', () => {
    const { logger, lines } = prettyLogger();
    logger.error(new Error('boom'));
    const [first, ...stack] = lines[0]!.trimEnd().split('\n');
    expect(first).toMatch(/ ERROR gateway boom$/);
    expect(stack[0]).toBe('    Error: boom');
    expect(stack.length).toBeGreaterThan(1);
  });

  it("leaves out Nest's start-up lines when asked to, and nothing else", () => {
    const mapped =
      '{"level":"info","time":0,"app":"gateway","context":"RouterExplorer","msg":"Mapped {/v1/models, GET} route"}';
    expect(formatPrettyLine(mapped, { quietStartup: true })).toBe('');
    expect(formatPrettyLine(mapped)).toContain('Mapped {/v1/models, GET} route');
    const started = '{"level":"info","time":0,"app":"gateway","context":"NestApplication","msg":"started"}';
    expect(formatPrettyLine(started, { quietStartup: true })).toContain('started');
    const failed = '{"level":"error","time":0,"app":"gateway","context":"InstanceLoader","msg":"failed"}';
    expect(formatPrettyLine(failed, { quietStartup: true })).toContain('failed');
  });

  it('passes a line that is not JSON through', () => {
    expect(formatPrettyLine('plain text')).toBe('plain text\n');
  });
});
