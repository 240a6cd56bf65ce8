import * as classTransformer from 'class-transformer';
import {
  GatewayError,
  jobProtocolVersionOf,
  REQUEST_SIZE_CEILINGS,
  REQUEST_SIZE_DEFAULTS,
  validateDto,
} from '@mgw/contracts';
import { rejectionOf } from '@mgw/testing';
import { ChatJobData, readEmbeddingJob, readJobData } from './job-data';

// A job's request keeps the checks of the HTTP edge's DTO when a worker reads it back from Redis.

const user = (content: unknown): Record<string, unknown> => ({ role: 'user', content });
const body = (fields: Record<string, unknown>): Record<string, unknown> => ({
  model: 'sim-chat',
  messages: [user('Hello')],
  ...fields,
});
const text = (value: string) => ({ type: 'text', text: value });

describe('a chat job read back from Redis', () => {
  afterEach(() => jest.restoreAllMocks());

  const job = (request: Record<string, unknown>) => ({
    v: 1,
    requestId: 'chatcmpl-0123456789abcdef0123456789abcdef',
    model: 'sim-chat',
    replyTo: 'gw-1',
    deadline: 2,
    enqueuedAt: 1,
    request,
  });

  it('runs the checks across fields on a job read back from Redis, naming the path inside the job', () => {
    const error = rejectionOf((value) => validateDto(ChatJobData, value), job(body({ top_logprobs: 3 })));
    expect(error.param).toBe('request.top_logprobs');
  });

  it('refuses an oversized request by its count before transforming, naming the path inside the job', () => {
    const transform = jest.spyOn(classTransformer, 'plainToInstance');
    const plain = job(body({ messages: Array.from({ length: 200_000 }, () => ({})) }));
    const error = rejectionOf((value) => validateDto(ChatJobData, value), plain);
    expect(error.param).toBe('request.messages');
    expect(transform).not.toHaveBeenCalled();
  });

  it('accepts what any gateway configuration may let through (the worker checks the ceilings)', () => {
    const parts = Array.from({ length: REQUEST_SIZE_DEFAULTS.contentParts + 1 }, () => text('x'));
    const data = validateDto(ChatJobData, job(body({ messages: [user(parts)] })));
    expect(data.request.messages[0]!.content).toHaveLength(parts.length);
    const over = Array.from({ length: REQUEST_SIZE_CEILINGS.contentParts + 1 }, () => text('x'));
    const error = rejectionOf(
      (value) => validateDto(ChatJobData, value),
      job(body({ messages: [user(over)] })),
    );
    expect(error.param).toBe('request.messages[0].content');
  });

  it('keeps a job request’s messages as sent', () => {
    const parts = (count: number) => Array.from({ length: count }, () => ({ type: 'text', text: '' }));
    const request = {
      model: 'sim-chat',
      messages: Array.from({ length: 4096 }, () => ({ role: 'user', content: parts(95) })),
    };
    const data = validateDto(ChatJobData, {
      v: 1,
      requestId: 'req_0123456789',
      model: 'sim-chat',
      replyTo: 'mgw:reply:gw',
      deadline: Date.now() + 60_000,
      enqueuedAt: Date.now(),
      request,
    });
    expect(data.request.messages).toBe(request.messages);
  });
});

describe('an embedding job read back from Redis', () => {
  it('holds for an embedding job read back from Redis too, naming the field under request', () => {
    const envelope = {
      requestId: 'req_0123456789',
      model: 'e',
      replyTo: 'r',
      deadline: 1,
      enqueuedAt: 0,
      v: 2,
    };
    expect(readEmbeddingJob({ ...envelope, request: { model: 'e', input: ['a'] } }).request.inputs).toEqual([
      'a',
    ]);
    let refused: unknown = null;
    try {
      readEmbeddingJob({ ...envelope, request: { model: 'e', input: [''] } });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).param).toBe('request.input[0]');
  });
});

describe('jobs as this release writes and reads them', () => {
  const requestId = 'req_0123456789abcdef';

  it('jobs: fields a newer gateway adds are dropped at every level, tool_choice included', () => {
    const job = readJobData(ChatJobData, {
      requestId,
      model: 'm',
      replyTo: 'mgw:reply:gw',
      deadline: 1,
      enqueuedAt: 1,
      request: {
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f', future: 1 }, future: 1 }],
        tool_choice: { type: 'function', function: { name: 'f', future: 1 }, future: 1 },
      },
    });
    expect(job.v).toBe(1);
    expect(job.request.tools).toEqual([{ type: 'function', function: { name: 'f' } }]);
    expect(job.request.tool_choice).toEqual({ type: 'function', function: { name: 'f' } });
  });

  it('jobs: a count-only chat job is version 3, read with its flag; other chat jobs stay version 1', () => {
    expect(jobProtocolVersionOf('chat', { countOnly: true })).toBe(3);
    expect(jobProtocolVersionOf('chat', {})).toBe(1);
    expect(jobProtocolVersionOf('chat')).toBe(1);
    expect(jobProtocolVersionOf('embedding')).toBe(2);
    const plain = {
      v: 3,
      requestId,
      model: 'm',
      replyTo: 'mgw:reply:gw',
      deadline: 1,
      enqueuedAt: 1,
      countOnly: true,
      request: { messages: [{ role: 'user', content: 'x' }] },
    };
    const job = readJobData(ChatJobData, plain);
    expect(job.v).toBe(3);
    expect(job.countOnly).toBe(true);
    expect(readJobData(ChatJobData, { ...plain, v: 1, countOnly: undefined }).countOnly).toBeUndefined();
    expect(() => readJobData(ChatJobData, { ...plain, countOnly: 'yes' })).toThrow('countOnly');
  });
});
