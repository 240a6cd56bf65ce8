import {
  BoundedLabel,
  methodLabel,
  OTHER_LABEL,
  rejectionReasonOf,
  routeLabel,
  statusLabel,
} from './label-bounds';

describe('BoundedLabel', () => {
  it('keeps only the values of a fixed set', () => {
    const models = BoundedLabel.fixed(['sim-chat', 'sim-image']);
    expect(models.of('sim-chat')).toBe('sim-chat');
    expect(models.of('made-up')).toBe(OTHER_LABEL);
    expect(models.of(undefined)).toBe(OTHER_LABEL);
    expect(models.of('')).toBe(OTHER_LABEL);
  });

  it('admits the first values of a capped set and folds the rest into other', () => {
    const label = BoundedLabel.capped(2);
    expect(label.of('a')).toBe('a');
    expect(label.of('b')).toBe('b');
    expect(label.of('c')).toBe(OTHER_LABEL);
    expect(label.of('a')).toBe('a');
    const many = Array.from({ length: 1000 }, (_, i) => label.of(`m${i}`));
    expect(new Set(many)).toEqual(new Set([OTHER_LABEL]));
  });
});

describe('HTTP labels', () => {
  it('uses the route pattern, never the path, and one value for unmatched requests', () => {
    expect(routeLabel('/v1/models/:id')).toBe('/v1/models/:id');
    expect(routeLabel(undefined)).toBe('unmatched');
  });

  it('bounds methods and statuses', () => {
    expect(methodLabel('post')).toBe('POST');
    expect(methodLabel('BREW')).toBe('OTHER');
    expect(statusLabel(404)).toBe('404');
    expect(statusLabel(0)).toBe('unknown');
    expect(statusLabel(1000)).toBe('unknown');
  });
});

describe('rejectionReasonOf', () => {
  it.each([
    [401, 'invalid_api_key', 'auth'],
    [403, null, 'auth'],
    [400, 'invalid_value', 'validation'],
    [404, 'model_not_found', 'validation'],
    [415, 'unsupported_media_type', 'validation'],
    [413, 'request_too_large', 'too_large'],
    [429, 'rate_limit_exceeded', 'overloaded'],
    [503, 'overloaded', 'overloaded'],
    [503, 'model_unavailable', 'unavailable'],
    [503, 'service_unavailable', 'unavailable'],
  ] as const)('%d %s is a refusal for %s', (status, code, reason) => {
    expect(rejectionReasonOf(status, code)).toBe(reason);
  });

  it.each([
    [499, 'client_closed_request'],
    [500, 'internal_error'],
    [502, 'worker_error'],
    [504, 'deadline_exceeded'],
  ])('%d %s is not a refusal', (status, code) => {
    expect(rejectionReasonOf(status, code)).toBeNull();
  });
});
