import { resolveInput } from './conversation';
import { ExpansionBudget, type ExpansionLimits } from './expansion.budget';
import type { ConversationItem, InputItem } from './responses.types';
import { refusal } from '@mgw/testing';

const LIMITS: ExpansionLimits = { bytes: 1000, textChars: 500, imageParts: 3, imageBytes: 300, messages: 10 };

const user = (text: string, id = 'msg_a'): ConversationItem => ({
  type: 'message',
  id,
  role: 'user',
  content: text,
});
/** A message of one image part whose URL is `bytes` long (the budget reads its length only). */
const image = (bytes: number): ConversationItem => ({
  type: 'message',
  id: 'msg_img',
  role: 'user',
  content: [{ type: 'input_image', image_url: 'd'.repeat(bytes) }],
});

describe('ExpansionBudget', () => {
  it('accepts up to each limit and refuses the item that passes it, naming the param and the limit', () => {
    const budget = new ExpansionBudget(LIMITS);
    for (let i = 0; i < 5; i++) budget.charge(user('x'.repeat(100)), 'previous_response_id');
    const error = refusal(() => budget.charge(user('y'), 'input'));
    expect(error.status).toBe(400);
    expect(error.param).toBe('input');
    expect(error.code).toBe('request_too_large');
    expect(error.message).toBe(
      "Invalid 'input': the request with its item references resolved is over the limit of 500 characters of text (at least 501).",
    );
  });

  it('counts a repeated item each time it comes', () => {
    const budget = new ExpansionBudget(LIMITS);
    const big = image(100);
    budget.charge(big, 'input');
    budget.charge(big, 'input');
    budget.charge(big, 'input');
    const error = refusal(() => budget.charge(big, 'input'));
    expect(error.message).toContain('3 image parts');
  });

  it('bounds the bytes of image URLs', () => {
    const budget = new ExpansionBudget({ ...LIMITS, imageParts: 100 });
    budget.charge(image(150), 'previous_response_id');
    budget.charge(image(150), 'previous_response_id');
    const error = refusal(() => budget.charge(image(1), 'previous_response_id'));
    expect(error.param).toBe('previous_response_id');
    expect(error.message).toBe(
      "Invalid 'previous_response_id': the request with the stored conversation it continues is over the limit of 300 bytes of image URLs (at least 301).",
    );
  });

  it('bounds bytes as UTF-8 (text, tool names and arguments)', () => {
    const budget = new ExpansionBudget({ ...LIMITS, textChars: 10_000 });
    budget.charge(user('é'.repeat(400)), 'input');
    const error = refusal(() => budget.charge(user('é'.repeat(101)), 'input'));
    expect(error.message).toContain('limit of 1000 bytes (at least 1002)');
    const calls = new ExpansionBudget(LIMITS);
    const call: ConversationItem = {
      type: 'function_call',
      call_id: 'c',
      name: 'f',
      arguments: 'a'.repeat(999),
    };
    calls.charge(call, 'input');
    expect(refusal(() => calls.charge(user('z'), 'input')).message).toContain('1000 bytes');
  });

  it('counts messages as chat sees them: function calls after an assistant message join it', () => {
    const budget = new ExpansionBudget({ ...LIMITS, messages: 3 });
    const call: ConversationItem = { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' };
    budget.charge({ type: 'message', role: 'assistant', content: 'ok' }, 'input');
    budget.charge(call, 'input');
    budget.charge(call, 'input');
    budget.charge({ type: 'function_call_output', call_id: 'c', output: 'r' }, 'input');
    budget.charge(user('again'), 'input');
    expect(refusal(() => budget.charge(user('one more'), 'input')).message).toContain('3 messages');
  });

  it('words a stored part found too long before it is read', () => {
    const error = new ExpansionBudget(LIMITS).overBytes(5000, 'previous_response_id');
    expect(error.param).toBe('previous_response_id');
    expect(error.message).toContain('over the limit of 1000 bytes (at least 5000)');
  });
});

describe('resolveInput with a budget', () => {
  it('stops resolving references at the one that passes a limit, reading no further', async () => {
    const budget = new ExpansionBudget(LIMITS);
    const input: InputItem[] = Array.from({ length: 40 }, () => ({ type: 'item_reference', id: 'msg_img' }));
    let resolved = 0;
    const resolve = (): Promise<ConversationItem> => {
      resolved += 1;
      return Promise.resolve(image(100));
    };
    await expect(resolveInput('req', input, resolve, budget)).rejects.toMatchObject({
      status: 400,
      param: 'input',
    });
    expect(resolved).toBe(4);
  });

  it('charges the request’s own items too, and gives them ids', async () => {
    const items = await resolveInput(
      'req',
      [{ type: 'message', role: 'user', content: 'hi' }],
      () => user('never'),
      new ExpansionBudget(LIMITS),
    );
    expect(items).toEqual([{ type: 'message', role: 'user', content: 'hi', id: 'msg_req_i0' }]);
    // Without a budget (nothing stored to expand) nothing is counted: the body's own limits held it.
    await expect(
      resolveInput(
        'req',
        [{ type: 'message', role: 'user', content: 'x'.repeat(10_000) }],
        () => user(''),
        null,
      ),
    ).resolves.toHaveLength(1);
    const tight = new ExpansionBudget({ ...LIMITS, textChars: 1 });
    await expect(
      resolveInput('req', [{ type: 'message', role: 'user', content: 'hi' }], () => user('never'), tight),
    ).rejects.toMatchObject({ param: 'input' });
  });
});
