import { GatewayError } from '@mgw/contracts';
import type { ExpansionBudget } from './expansion.budget';
import type { ConversationItem, InputItem, OutputItem, ResponseObject } from './responses.types';

/** A response's output as the items of the next turn's conversation. */
export function outputAsInput(output: readonly OutputItem[]): ConversationItem[] {
  return output.map((item): ConversationItem => {
    if (item.type === 'function_call') {
      const { id, call_id, name, arguments: args } = item;
      return { type: 'function_call', id, call_id, name, arguments: args };
    }
    return {
      type: 'message',
      id: item.id,
      role: 'assistant',
      content: item.content.map((part) => ({ type: 'output_text' as const, text: part.text })),
    };
  });
}

/** The conversation the stored turns make: each turn's input, then its response's output. */
export function historyOf(
  turns: ReadonlyArray<{ input: ConversationItem[]; response: ResponseObject }>,
): ConversationItem[] {
  const items: ConversationItem[] = [];
  for (const turn of turns) items.push(...turn.input, ...outputAsInput(turn.response.output));
  return items;
}

/** The request id inside an item id of this gateway (`msg_<request id>_3`, `fc_…_i2`), or null. */
export function requestIdOfItem(itemId: string): string | null {
  const match = /^(?:msg|fc|fco)_([A-Za-z0-9_-]{8,64})_i?\d+$/.exec(itemId);
  return match === null ? null : match[1]!;
}

/**
 * A turn's input as it is kept: references resolved (`resolve` finds an item by id, reading what it must),
 * reasoning items left out (no backend here reads them), and every item given an id — its own, or
 * `<kind>_<request id>_i<n>`. Each item is charged to `budget` as it is resolved, so a reference repeated
 * past a limit is refused when it passes it, not after the whole input was put together. Without a budget
 * (an input that continues nothing and refers to nothing: the body's own limits bounded it) nothing is
 * counted.
 */
export async function resolveInput(
  requestId: string,
  input: readonly InputItem[],
  resolve: (id: string, param: string) => ConversationItem | Promise<ConversationItem>,
  budget: ExpansionBudget | null,
): Promise<ConversationItem[]> {
  const items: ConversationItem[] = [];
  for (let index = 0; index < input.length; index++) {
    const item = input[index]!;
    switch (item.type) {
      case 'reasoning':
        continue;
      case 'item_reference': {
        const found = resolve(item.id, `input[${index}].id`);
        const resolved = found instanceof Promise ? await found : found;
        budget?.charge(resolved, 'input');
        items.push(resolved);
        continue;
      }
      default: {
        const prefix = item.type === 'message' ? 'msg' : item.type === 'function_call' ? 'fc' : 'fco';
        // Copied with Object.assign: a spread followed by `id` takes V8's slow path, on every request.
        const own: ConversationItem = Object.assign({}, item, {
          id: item.id ?? `${prefix}_${requestId}_i${index}`,
        });
        budget?.charge(own, 'input');
        items.push(own);
      }
    }
  }
  return items;
}

export function itemNotFound(id: string, param: string): GatewayError {
  return new GatewayError(
    404,
    'invalid_request_error',
    'not_found',
    `Item with id '${id}' not found.`,
    param,
  );
}
