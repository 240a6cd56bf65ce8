import type { ServerResponse } from 'node:http';
import { GatewayError, type ChatDoneMessage } from '@mgw/contracts';
import { SseWriter } from '@mgw/http';
import { ChatChunkSerializer } from './chat-chunk.serializer';
import { ChatEventWriter } from './chat-event.writer';

const done: ChatDoneMessage = {
  requestId: 'req_0123456789',
  seq: 9,
  kind: 'chat-done',
  finishReasons: ['stop'],
  usage: { prompt_tokens: 1, completion_tokens: 3 },
};

/** Renders one stream's events into text, skipping those up to `after`. */
function render(after: number, play: (writer: ChatEventWriter) => void): string {
  let text = '';
  const res = {
    destroyed: false,
    writableLength: 0,
    writableFinished: true,
    writeHead: () => undefined,
    flushHeaders: () => undefined,
    write: (chunk: string) => {
      text += chunk;
      return true;
    },
    end: () => undefined,
    once: () => undefined,
  } as unknown as ServerResponse;
  const sse = new SseWriter(res, { bufferLimitBytes: 1 << 20, keepAliveMs: 0, onOverflow: () => undefined });
  sse.open({});
  play(new ChatEventWriter(sse, new ChatChunkSerializer('req_0123456789', 'm', 1), after));
  return text;
}

const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));

describe('ChatEventWriter', () => {
  const stream = (writer: ChatEventWriter) => {
    writer.delta(0, 'Hel', [{ token: 'Hel', logprob: -1, bytes: null, top_logprobs: [] }]);
    writer.delta(0, 'lo');
    writer.done(done);
  };

  it('numbers every data event from 0, [DONE] included', () => {
    const text = render(-1, stream);
    // The opening chunk (logprobs), two deltas, the final chunk, [DONE].
    expect(ids(text)).toEqual([0, 1, 2, 3, 4]);
    expect(text.endsWith('id: 4\ndata: [DONE]\n\n')).toBe(true);
  });

  it('writes only the events after a resume position, exactly as the first time', () => {
    const full = render(-1, stream);
    const resumed = render(1, stream);
    expect(ids(resumed)).toEqual([2, 3, 4]);
    expect(full.endsWith(resumed)).toBe(true);
    // After the end, still [DONE].
    expect(render(4, stream)).toBe('id: 4\ndata: [DONE]\n\n');
    expect(render(99, stream)).toBe('id: 4\ndata: [DONE]\n\n');
  });

  it('numbers an error and its [DONE] like any event', () => {
    const text = render(0, (writer) => {
      writer.delta(0, 'partial');
      writer.delta(0, ' answer');
      writer.error(GatewayError.workerFailed('broke'));
    });
    expect(ids(text)).toEqual([1, 2, 3]);
    expect(text).toContain('id: 2\ndata: {"error":');
  });
});
