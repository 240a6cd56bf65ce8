import type { Principal } from '@mgw/access';
import { GatewayError, type ModelEntry } from '@mgw/contracts';
import { fallbacksFor, jobFailureFallsBack, refusalFallsBack } from './fallback.policy';

const model = (fallbacks?: unknown): ModelEntry =>
  ({
    id: 'big',
    type: 'chat/compilations',
    owned_by: 'tests',
    created: 0,
    liveWorkers: 0,
    concurrency: 0,
    ...(fallbacks === undefined ? {} : { fallbacks }),
  }) as ModelEntry;

const keyFor = (models: string[] | null): Principal => ({
  keyId: 'key_000000000000000000000001',
  name: 'k',
  bootstrap: false,
  models: models && new Set(models),
  rpm: null,
  tpm: null,
  maxConcurrent: null,
  priority: 'normal',
  weight: 1,
});

describe('fallbacksFor', () => {
  it('is the catalog list, in order, for a key that may use every model', () => {
    expect(fallbacksFor(model(['small', 'tiny']), keyFor(null))).toEqual(['small', 'tiny']);
    expect(fallbacksFor(model(['small', 'tiny']), null)).toEqual(['small', 'tiny']);
  });

  it('is empty for a model without fallbacks', () => {
    expect(fallbacksFor(model(), keyFor(null))).toEqual([]);
  });

  it('leaves out, silently, every fallback the key may not use', () => {
    expect(fallbacksFor(model(['small', 'tiny']), keyFor(['big', 'tiny']))).toEqual(['tiny']);
    expect(fallbacksFor(model(['small', 'tiny']), keyFor(['big']))).toEqual([]);
  });

  it('tries each model at most once, never the model itself, whatever the registry sent', () => {
    expect(fallbacksFor(model(['small', 'big', 'small', 7, 'tiny']), keyFor(null))).toEqual([
      'small',
      'tiny',
    ]);
    expect(fallbacksFor(model('small'), keyFor(null))).toEqual([]);
  });
});

describe('refusalFallsBack', () => {
  it('passes a model without a live worker or with a full queue on to the next', () => {
    expect(refusalFallsBack(GatewayError.modelUnavailable('big'))).toBe('unavailable');
    expect(refusalFallsBack(GatewayError.modelUnavailable('big', 1000))).toBe('unavailable');
    expect(refusalFallsBack(GatewayError.overloaded('big', 3))).toBe('overloaded');
  });

  it('keeps the key’s own limits, the client’s mistakes and outages as the answer', () => {
    const refusals = [
      GatewayError.rateLimited('requests', 'Rate limit reached', {}),
      GatewayError.rateLimited('tokens', 'Rate limit reached', {}),
      GatewayError.modelNotFound('big'),
      GatewayError.wrongModelType('big', 'chat/compilations', 'images/generations'),
      GatewayError.invalidRequest('bad', 'temperature', 'unsupported_parameter'),
      GatewayError.contextLengthExceeded(64, 100, true),
      GatewayError.serviceUnavailable('The rate limiter is not reachable.'),
    ];
    expect(refusals.map(refusalFallsBack)).toEqual(refusals.map(() => null));
  });
});

describe('jobFailureFallsBack', () => {
  it('passes a failing model or upstream on: 5xx, an upstream timeout, an upstream rate limit', () => {
    const failures = [
      GatewayError.workerFailed('The model backend failed.'),
      new GatewayError(502, 'server_error', 'upstream_error', 'The upstream model server failed (HTTP 500).'),
      new GatewayError(502, 'server_error', 'upstream_unavailable', 'The connection failed.'),
      new GatewayError(504, 'timeout_error', 'upstream_timeout', 'The upstream model server timed out.'),
      new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', 'The upstream is rate limiting.'),
      GatewayError.modelUnavailable('big', 1000),
    ];
    expect(failures.map(jobFailureFallsBack)).toEqual(failures.map(() => true));
  });

  it('never passes on what the client must fix, nor the request’s own deadline', () => {
    const failures = [
      GatewayError.invalidRequest('temperature is not supported', 'temperature'),
      GatewayError.contextLengthExceeded(64, 100, false),
      GatewayError.deadlineExceeded(1000),
    ];
    expect(failures.map(jobFailureFallsBack)).toEqual([false, false, false]);
  });
});
