import { GatewayError } from './gateway-error';

describe('GatewayError wire form', () => {
  it('carries Retry-After from a worker to the gateway', () => {
    const original = new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', 'slow down', null, {
      'retry-after': '12',
    });
    const wire = original.toWire();
    expect(wire).toEqual({
      status: 429,
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      message: 'slow down',
      param: null,
      retryAfter: 12,
    });
    const back = GatewayError.fromWire(wire);
    expect(back.status).toBe(429);
    expect(back.headers).toEqual({ 'retry-after': '12' });
    expect(back.toBody()).toEqual(original.toBody());
  });

  it('leaves out a Retry-After that is not a whole number of seconds', () => {
    const error = new GatewayError(503, 'server_error', null, 'x', null, { 'retry-after': 'soon' });
    expect(error.toWire()).not.toHaveProperty('retryAfter');
    expect(GatewayError.fromWire(error.toWire()).headers).toEqual({});
  });
});
