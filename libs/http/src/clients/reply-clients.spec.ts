import type { FastifyReply } from 'fastify';
import { JsonReplyClient } from './json-reply.client';
import { SseReplyClient } from './sse-reply.client';
import { FakeResponse } from '@mgw/testing';

function fakeReply() {
  const raw = new FakeResponse();
  const calls: string[] = [];
  const reply = {
    raw,
    hijack: () => void calls.push('hijack'),
    status: (code: number) => {
      calls.push(`status ${code}`);
      return reply;
    },
    header: (name: string, value: string) => {
      calls.push(`header ${name}: ${value}`);
      return reply;
    },
    send: (body: unknown) => {
      calls.push(`send ${JSON.stringify(body)}`);
      return Promise.resolve();
    },
  };
  return { raw, calls, reply: reply as unknown as FastifyReply };
}

const options = { bufferLimitBytes: 1 << 20, keepAliveMs: 0 };

describe('SseReplyClient', () => {
  it('opens once: takes the connection from Fastify, sends the 200 with its headers, then the events written before', () => {
    const { raw, calls, reply } = fakeReply();
    const opened: unknown[] = [];
    const client = new SseReplyClient(reply, { ...options, onOpen: (res) => opened.push(res) });
    client.setHeaders({ 'x-ratelimit-remaining-requests': '9' });
    client.events.data('{"a":1}');
    expect(raw.written).toEqual([]);
    expect(client.open({ 'x-request-id': 'r1' })).toBe(true);
    expect(client.open({ 'x-request-id': 'r1' })).toBe(false);
    expect([calls, raw.status, opened.length]).toEqual([['hijack'], 200, 1]);
    expect(raw.headers).toMatchObject({
      'content-type': 'text/event-stream; charset=utf-8',
      'x-request-id': 'r1',
      'x-ratelimit-remaining-requests': '9',
    });
    expect(raw.written).toEqual(['data: {"a":1}\n\n']);
  });

  it('does not open for a client that has gone, and reports the leaving once, its stream closed', () => {
    const { raw, calls, reply } = fakeReply();
    const client = new SseReplyClient(reply, options);
    const gone = jest.fn();
    client.whenGone(gone);
    raw.leave();
    expect([client.gone, gone.mock.calls.length]).toEqual([true, 1]);
    expect(client.open({})).toBe(false);
    client.events.data('{"late":true}');
    expect([calls, raw.written]).toEqual([[], []]);
  });

  it('reports a client that stopped reading as gone: its stream is cut at the buffer bound', () => {
    const { raw, reply } = fakeReply();
    const client = new SseReplyClient(reply, { ...options, bufferLimitBytes: 10 });
    const gone = jest.fn();
    client.whenGone(gone);
    client.open({});
    raw.writableLength = 11;
    client.events.data('{"big":true}');
    expect(gone).toHaveBeenCalled();
    expect(raw.destroyed).toBe(true);
  });
});

describe('JsonReplyClient', () => {
  it("sends the 200 with its headers and the body; the key's headers go only on a response not yet sent", async () => {
    const { raw, calls, reply } = fakeReply();
    const client = new JsonReplyClient(reply);
    client.setHeaders({ 'x-ratelimit-limit-requests': '10' });
    await client.send({ 'x-served-model': 'm' }, { ok: true });
    raw.headersSent = true;
    client.setHeaders({ late: 'no' });
    expect(raw.headers).toEqual({});
    expect(calls).toEqual([
      'header x-ratelimit-limit-requests: 10',
      'status 200',
      'header x-served-model: m',
      'send {"ok":true}',
    ]);
  });

  it('hears of a client that leaves before its answer, at once when it has left already', () => {
    const { raw, reply } = fakeReply();
    raw.leave();
    const gone = jest.fn();
    new JsonReplyClient(reply).whenGone(gone);
    expect(gone).toHaveBeenCalledTimes(1);
  });
});
