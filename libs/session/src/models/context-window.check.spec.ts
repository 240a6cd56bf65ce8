import { GatewayError, type ModelEntry } from '@mgw/contracts';
import { ParamOrigins, type InferenceMessage } from '@mgw/request';
import { checkContextWindow, MAX_CHARS_PER_TOKEN } from './context-window.check';

const model = (contextTokens?: number): ModelEntry => ({
  id: 'sim-chat',
  type: 'chat/compilations',
  owned_by: 'model-gateway',
  created: 0,
  liveWorkers: 1,
  readyWorkers: 1,
  concurrency: 1,
  ...(contextTokens === undefined ? {} : { contextTokens }),
});

const messages = (...texts: string[]) =>
  texts.map((content) => ({ role: 'user', content })) as unknown as InferenceMessage[];

describe('checkContextWindow', () => {
  it('lets through any prompt whose lower bound fits, however many tokens it really has', () => {
    // 1000 tokens of context: up to 256,000 characters may still be 1000 tokens of 256-character tokens.
    const atBound = 'y'.repeat(1000 * MAX_CHARS_PER_TOKEN);
    expect(() => checkContextWindow(messages(atBound), model(1000))).not.toThrow();
    expect(() => checkContextWindow(messages('y'.repeat(10_000_000)), model())).not.toThrow();
  });

  it('refuses a prompt whose characters alone need more tokens, with OpenAI error fields', () => {
    const parts = [
      { role: 'user', content: [{ type: 'text', text: 'y'.repeat(500 * MAX_CHARS_PER_TOKEN) }] },
      { role: 'user', content: 'y'.repeat(500 * MAX_CHARS_PER_TOKEN + 1) },
    ] as unknown as InferenceMessage[];
    let error: unknown;
    try {
      checkContextWindow(parts, model(1000));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).toBody()).toEqual({
      error: {
        message:
          "This model's maximum context length is 1000 tokens. However, your messages resulted in at least 1001 tokens. Please reduce the length of the messages.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    expect((error as GatewayError).status).toBe(400);
  });

  it("is told by the front-end's own prompt field through its origins, the message as it is", () => {
    let error: unknown;
    try {
      checkContextWindow(messages('y'.repeat(2 * MAX_CHARS_PER_TOKEN + 1)), model(2));
    } catch (caught) {
      error = caught;
    }
    const told = new ParamOrigins().set('messages', 'input', 'drop').told(error as GatewayError);
    expect(told).toMatchObject({ param: 'input', message: (error as GatewayError).message });
  });
});
