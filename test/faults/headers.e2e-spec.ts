import { request as httpRequest } from 'node:http';
import { Stack } from '../support/stack';

interface RawResponse {
  status: number;
  body: string;
}

/** A raw HTTP/1.1 request, so headers fetch would normalise or refuse can be sent as they are. */
function raw(stack: Stack, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  const url = new URL(stack.baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers,
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function expectErrorShape(response: RawResponse): void {
  const parsed = JSON.parse(response.body) as { error: Record<string, unknown> };
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof parsed.error.message).toBe('string');
}

const validBody = JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] });

describe('faults: hostile headers', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({ without: ['image-worker'], waitForModels: ['sim-chat'] });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it.each([
    ['no Content-Type', {}],
    ['text/plain', { 'content-type': 'text/plain' }],
    ['garbage', { 'content-type': '}{ not a media type' }],
    ['form data', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['multipart without boundary', { 'content-type': 'multipart/form-data' }],
  ])('refuses a body with %s as 415 or 400 in the error shape', async (_label, type) => {
    const res = await raw(
      stack,
      { authorization: `Bearer ${stack.apiKey}`, ...type, 'content-length': String(validBody.length) },
      validBody,
    );
    expect([400, 415]).toContain(res.status);
    expectErrorShape(res);
  });

  it('refuses an empty JSON body with 400', async () => {
    const res = await raw(stack, {
      authorization: `Bearer ${stack.apiKey}`,
      'content-type': 'application/json',
      'content-length': '0',
    });
    expect(res.status).toBe(400);
    expectErrorShape(res);
  });

  it.each([
    ['a missing header', undefined],
    ['an empty header', ''],
    ['no scheme', 'KEY'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['the scheme alone', 'Bearer'],
    ['the scheme and spaces', 'Bearer    '],
    ['a wrong key in lower case', 'bearer sk-wrong'],
    ['extra spaces around a wrong key', 'Bearer    sk-wrong   '],
    ['two tokens', 'Bearer KEY other'],
    ['a very long key', `Bearer ${'k'.repeat(8000)}`],
    ['control characters', 'Bearer sk-\tbad'],
    // Raw UTF-8 bytes on the wire, as a client that does not encode headers would send them.
    ['non-ASCII', Buffer.from('Bearer sk-ключ', 'utf8').toString('latin1')],
  ])('answers %s with 401, never 500', async (_label, authorization) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (authorization !== undefined) {
      headers.authorization = authorization.replace('KEY', stack.apiKey);
    }
    const res = await raw(stack, headers, validBody);
    expect(res.status).toBe(401);
    expectErrorShape(res);
  });

  it('answers oversized headers with 431 in the error shape', async () => {
    const res = await raw(
      stack,
      {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        'x-padding': 'p'.repeat(64 * 1024),
      },
      validBody,
    );
    expect(res.status).toBe(431);
    expectErrorShape(res);
  });

  it('still serves a valid request afterwards, and nothing crashed', async () => {
    const res = await raw(
      stack,
      { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      validBody,
    );
    expect(res.status).toBe(200);
    for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
  });
});
