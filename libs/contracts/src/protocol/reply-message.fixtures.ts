import type { ReplyMessage } from './reply-message.types';

// One valid message of each kind, for the protocol specs (not part of the library's exports).
export const requestId = 'req_0123456789';

export const valid: Record<ReplyMessage['kind'], ReplyMessage> = {
  started: { requestId, seq: 0, kind: 'started', workerId: 'chat-host-1-abc' },
  alive: { requestId, seq: 1, kind: 'alive' },
  moved: { requestId, seq: 1, kind: 'moved' },
  delta: { requestId, seq: 1, kind: 'delta', choice: 0, content: 'He said "hi"\n😀' },
  'tool-call': {
    requestId,
    seq: 1,
    kind: 'tool-call',
    choice: 0,
    index: 0,
    id: 'call_0123456789',
    name: 'get_weather',
    arguments: '{"city":',
  },
  'chat-done': {
    requestId,
    seq: 2,
    kind: 'chat-done',
    finishReasons: ['stop', 'length'],
    usage: { prompt_tokens: 5, completion_tokens: 7 },
  },
  image: {
    requestId,
    seq: 1,
    kind: 'image',
    index: 0,
    key: 'mgw:image:req_0123456789:0',
    revisedPrompt: 'a cat',
  },
  'image-done': { requestId, seq: 2, kind: 'image-done', count: 1 },
  'embedding-done': {
    requestId,
    seq: 1,
    kind: 'embedding-done',
    key: 'mgw:embedding:req_0123456789',
    count: 2,
    dimensions: 8,
    usage: { prompt_tokens: 5, completion_tokens: 0 },
  },
  error: {
    requestId,
    seq: 1,
    kind: 'error',
    error: { status: 502, type: 'server_error', code: 'worker_error', message: 'boom', param: null },
  },
};

export function raw(message: unknown): string {
  return JSON.stringify(message);
}
