import { GatewayError, type ChatDoneMessage, type ToolCallMessage } from '@mgw/contracts';
import { BoundedJsonRenderer, type BoundedAnswer } from './bounded-json.renderer';

/** An answer that holds up to `max` characters and finishes as the text it collected. */
function answerOf(max: number): BoundedAnswer<string> & { parts: string[] } {
  const parts: string[] = [];
  let size = 0;
  const grow = (text: string) => {
    size += text.length;
    if (size > max) return false;
    parts.push(text);
    return true;
  };
  return {
    parts,
    add: (_choice, content) => grow(content),
    addToolCall: (piece: ToolCallMessage) => grow(piece.arguments),
    finish: () => parts.join(''),
    tooLarge: () => GatewayError.workerFailed('too large'),
  };
}

const done = { kind: 'chat-done' } as ChatDoneMessage;
const piece = (args: string) => ({ choice: 0, index: 0, arguments: args }) as ToolCallMessage;

describe('BoundedJsonRenderer', () => {
  it('gives the collected answer', async () => {
    const renderer = new BoundedJsonRenderer(answerOf(100), () => undefined);
    renderer.delta(0, 'hello ');
    renderer.toolCall(piece('{}'));
    expect(await renderer.done(done)).toBe('hello {}');
  });

  it('refuses once, when the answer outgrows its bound, and collects nothing after', () => {
    const answer = answerOf(5);
    const refused: GatewayError[] = [];
    const renderer = new BoundedJsonRenderer(answer, (error) => refused.push(error));
    renderer.delta(0, 'abc');
    renderer.toolCall(piece('defg'));
    renderer.delta(0, 'h');
    renderer.toolCall(piece('i'));
    expect(refused.map((error) => error.message)).toEqual(['too large']);
    expect(answer.parts).toEqual(['abc']);
  });

  it('keeps the answer before it gives it, and gives it even when keeping fails', async () => {
    const order: string[] = [];
    const kept = new BoundedJsonRenderer(
      answerOf(100),
      () => undefined,
      async (text) => {
        await Promise.resolve();
        order.push(`kept ${text}`);
      },
    );
    kept.delta(0, 'x');
    const given = await kept.done(done);
    order.push(`given ${given}`);
    expect(order).toEqual(['kept x', 'given x']);

    const lost = new BoundedJsonRenderer(
      answerOf(100),
      () => undefined,
      () => Promise.reject(new Error('down')),
    );
    lost.delta(0, 'y');
    expect(await lost.done(done)).toBe('y');
  });
});
