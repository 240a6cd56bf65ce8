import { GatewayError, type ChatDoneMessage } from '@mgw/contracts';
import type { SseWriter } from '@mgw/http';
import { RESPONSES_ORIGINS } from './chat-request.translator';
import { ResponseEventsRenderer } from './response-events.renderer';
import { ResponseJsonRenderer } from './response-json.renderer';
import { UNSTORED_ECHO, type ResponseBase } from './response-output';

const base: ResponseBase = {
  requestId: 'req_abcdefgh',
  model: 'm',
  createdMs: 1_700_000_000_000,
  echo: UNSTORED_ECHO,
};
const done: ChatDoneMessage = {
  kind: 'chat-done',
  requestId: 'req_abcdefgh',
  seq: 9,
  finishReasons: ['tool_calls'],
  usage: { prompt_tokens: 3, completion_tokens: 4 },
};

function recorder(): {
  sse: SseWriter;
  events: Array<{ name: string; id?: number; data: Record<string, unknown> }>;
  ended: () => boolean;
} {
  const events: Array<{ name: string; id?: number; data: Record<string, unknown> }> = [];
  let ended = false;
  const sse = {
    event: (name: string, json: string, id?: number) =>
      events.push({ name, id, data: JSON.parse(json) as Record<string, unknown> }),
    done: () => (ended = true),
    close: () => (ended = true),
  } as unknown as SseWriter;
  return { sse, events, ended: () => ended };
}

function play(renderer: ResponseEventsRenderer | ResponseJsonRenderer): void {
  renderer.delta(0, 'Hel');
  renderer.delta(0, 'lo');
  renderer.toolCall({
    kind: 'tool-call',
    requestId: 'req_abcdefgh',
    seq: 3,
    choice: 0,
    index: 0,
    id: 'call_1',
    name: 'f',
    arguments: '{"a"',
  });
  renderer.toolCall({
    kind: 'tool-call',
    requestId: 'req_abcdefgh',
    seq: 4,
    choice: 0,
    index: 0,
    arguments: ':1}',
  });
}

describe('ResponseEventsRenderer', () => {
  it("writes OpenAI's event order with sequence numbers from 0 and no gaps", () => {
    const { sse, events, ended } = recorder();
    const renderer = new ResponseEventsRenderer(sse, base);
    play(renderer);
    renderer.done(done);
    expect(events.map((event) => event.name)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    events.forEach((event, index) => {
      expect(event.id).toBe(index);
      expect(event.data).toMatchObject({ type: event.name, sequence_number: index });
    });
    const final = events.at(-1)!.data.response as Record<string, unknown>;
    expect(final).toMatchObject({
      id: 'resp_req_abcdefgh',
      status: 'completed',
      usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
      output: [
        {
          type: 'message',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello', annotations: [] }],
        },
        { type: 'function_call', status: 'completed', call_id: 'call_1', name: 'f', arguments: '{"a":1}' },
      ],
    });
    expect(ended()).toBe(true);
  });

  it('writes only the events after `starting_after` on a resume', () => {
    const { sse, events } = recorder();
    const renderer = new ResponseEventsRenderer(sse, base, 5);
    play(renderer);
    renderer.done(done);
    expect(events[0]).toMatchObject({ id: 6, name: 'response.output_text.done' });
  });

  it('ends a failure with `error` then `response.failed`', () => {
    const { sse, events } = recorder();
    const renderer = new ResponseEventsRenderer(sse, base);
    renderer.delta(0, 'x');
    renderer.error(GatewayError.workerFailed('boom'));
    expect(events.slice(-2).map((event) => event.name)).toEqual(['error', 'response.failed']);
    expect(events.at(-1)!.data.response).toMatchObject({ status: 'failed', error: { message: 'boom' } });
  });

  it("renders a backend's refusal as the session tells it, by the Responses field", () => {
    const { sse, events } = recorder();
    const renderer = new ResponseEventsRenderer(sse, base);
    renderer.error(
      RESPONSES_ORIGINS.told(
        GatewayError.invalidRequest(
          'The model `m` accepts text only; messages[1].content has an image part.',
          'messages[1].content',
          'unsupported_content',
        ),
      ),
    );
    const message = 'The model `m` accepts text only; input has an image part.';
    expect(events.at(-2)!.data).toMatchObject({ code: 'unsupported_content', param: 'input', message });
    expect(events.at(-1)!.data.response).toMatchObject({ error: { code: 'unsupported_content', message } });
  });

  it('gives the same response as JSON, incomplete at the length limit', () => {
    const renderer = new ResponseJsonRenderer(base, () => undefined);
    play(renderer);
    const response = renderer.done({ ...done, finishReasons: ['length'] }) as unknown as Record<
      string,
      unknown
    >;
    expect(response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
  });
});
