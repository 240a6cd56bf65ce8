import type { ResponsesRequest } from './responses.types';

/**
 * The Responses name of a chat request's content part (an image's URL, for a refusal of it), given where
 * each chat message came from in the conversation (`origins`, filled by `toChatRequest`) and how many of
 * the conversation's items are stored turns: a part of the request's own input item is
 * `input[i].content[j].image_url`; one of an item it refers to is that reference, `input[i].id`; one of a
 * stored turn is `previous_response_id`. Worked out only when a part is refused.
 */
export function responsesPartName(
  request: Pick<ResponsesRequest, 'input'>,
  historyLength: number,
  origins: readonly number[],
): (message: number, part: number) => string {
  return (message, part) => {
    const at = origins[message];
    if (at === undefined) return 'input';
    if (at < historyLength) return 'previous_response_id';
    // The conversation holds the input's items in order, but its reasoning items (`resolveInput`).
    let seen = historyLength - 1;
    for (let index = 0; index < request.input.length; index++) {
      const item = request.input[index]!;
      if (item.type === 'reasoning' || ++seen !== at) continue;
      return item.type === 'item_reference'
        ? `input[${index}].id`
        : `input[${index}].content[${part}].image_url`;
    }
    return 'input';
  };
}
