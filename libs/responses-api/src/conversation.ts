import { GatewayError } from '@mgw/contracts';
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
 * A turn's input as it is kept: references resolved (`resolve` finds an item by id), reasoning items left
 * out (no backend here reads them), and every item given an id — its own, or `<kind>_<request id>_i<n>`.
 */
export function resolveInput(
  requestId: string,
  input: readonly InputItem[],
  resolve: (id: string, param: string) => ConversationItem,
): ConversationItem[] {
  const items: ConversationItem[] = [];
  input.forEach((item, index) => {
    switch (item.type) {
      case 'reasoning':
        return;
      case 'item_reference':
        items.push(resolve(item.id, `input[${index}].id`));
        return;
      default: {
        const prefix = item.type === 'message' ? 'msg' : item.type === 'function_call' ? 'fc' : 'fco';
        // Copied with Object.assign: a spread followed by `id` is several times slower, on every request.
        items.push(Object.assign({}, item, { id: item.id ?? `${prefix}_${requestId}_i${index}` }));
      }
    }
  });
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
