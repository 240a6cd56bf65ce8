import {
  CHAT_LIMITS,
  conversationSizeProblem,
  describeValue,
  type FieldProblem,
  jsonSchemaProblem,
  MODEL_REQUEST_LIMITS,
  type RequestSizeLimits,
  TOOL_LIMITS,
  TOOL_NAME_PATTERN,
} from '@mgw/contracts';
import type { ChatRequest, InferenceMessage } from './chat-request';

/**
 * The rules of a chat request that only its assembled conversation can break, for the front-ends that
 * assemble one from a body of another shape (a Responses request with its stored turns and references, a
 * Messages request with its system prompt and tool results lifted): its size bounds (the operator's
 * `RequestSizeLimits`, OpenAI's tool bounds), names and schemas the backends compile, and the tool loop's
 * consistency. Worded as the Chat Completions request's own refusals, by neutral path: the front-end tells
 * them in its client's words (`ParamOrigins.told`). A Chat Completions body keeps them by its own
 * validation, so its front-end does not run this.
 */

const STOP_MAX_LENGTH = CHAT_LIMITS.stop.maxLength;

const invalid = (param: string, problem: string): FieldProblem => ({
  param,
  message: `Invalid '${param}': ${problem}`,
});

const NAME_PROBLEM = 'a name of 1 to 64 characters from a-z, A-Z, 0-9, _ and -';

function sizeProblem(request: ChatRequest, limits: Readonly<RequestSizeLimits>): FieldProblem | null {
  const { messages, tools } = request;
  if (messages.length > CHAT_LIMITS.messages.max) {
    return invalid(
      'messages',
      `expected at most ${CHAT_LIMITS.messages.max} messages, got an array of ${messages.length}.`,
    );
  }
  let textChars = 0;
  let imageParts = 0;
  let imageBytes = 0;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const calls = message.role === 'assistant' ? message.toolCalls : undefined;
    if (calls !== undefined && calls.length > TOOL_LIMITS.toolCalls.max) {
      return invalid(
        `messages[${i}].tool_calls`,
        `expected at most ${TOOL_LIMITS.toolCalls.max} tool calls, got an array of ${calls.length}.`,
      );
    }
    const content = message.content;
    if (typeof content === 'string') textChars += content.length;
    else if (content !== null) {
      if (content.length > limits.contentParts) {
        return invalid(
          `messages[${i}].content`,
          `expected at most ${limits.contentParts} content parts, got an array of ${content.length}.`,
        );
      }
      for (const part of content) {
        if (part.type === 'text') textChars += part.text.length;
        else {
          imageParts += 1;
          imageBytes += part.image_url.url.length;
        }
      }
    }
  }
  const tooLarge = conversationSizeProblem({ textChars, imageParts, imageBytes }, limits);
  if (tooLarge !== null) return tooLarge;
  if (tools.length > TOOL_LIMITS.tools.max) {
    return invalid(
      'tools',
      `expected at most ${TOOL_LIMITS.tools.max} tools, got an array of ${tools.length}.`,
    );
  }
  return null;
}

function messageProblem(message: InferenceMessage, i: number): FieldProblem | null {
  const { content } = message;
  if (Array.isArray(content)) {
    if (content.length === 0) return invalid(`messages[${i}].content`, 'expected at least one content part.');
    for (let p = 0; p < content.length; p++) {
      const part = content[p]!;
      if (part.type === 'image_url' && part.image_url.url.length === 0) {
        return invalid(
          `messages[${i}].content`,
          `content[${p}].image_url.url: expected a non-empty string, got ${describeValue(part.image_url.url)}.`,
        );
      }
    }
  }
  if (message.role !== 'assistant' || message.toolCalls === undefined) return null;
  for (let c = 0; c < message.toolCalls.length; c++) {
    const { id, function: fn } = message.toolCalls[c]!;
    const path = `messages[${i}].tool_calls[${c}]`;
    if (id.length === 0 || id.length > TOOL_LIMITS.toolCallId.maxLength) {
      const what =
        id.length === 0
          ? 'a non-empty id'
          : `a string of at most ${TOOL_LIMITS.toolCallId.maxLength} characters`;
      return invalid(`${path}.id`, `expected ${what}, got ${describeValue(id)}.`);
    }
    if (!TOOL_NAME_PATTERN.test(fn.name)) {
      return invalid(`${path}.function.name`, `expected ${NAME_PROBLEM}, got ${describeValue(fn.name)}.`);
    }
  }
  return null;
}

function toolsProblem(request: ChatRequest): FieldProblem | null {
  const names = new Set<string>();
  for (let i = 0; i < request.tools.length; i++) {
    const { name, description, parameters } = request.tools[i]!;
    const path = `tools[${i}].function`;
    if (!TOOL_NAME_PATTERN.test(name)) {
      return invalid(`${path}.name`, `expected ${NAME_PROBLEM}, got ${describeValue(name)}.`);
    }
    if (description !== undefined && description.length > TOOL_LIMITS.description.maxLength) {
      return invalid(
        `${path}.description`,
        `expected a string of at most ${TOOL_LIMITS.description.maxLength} characters, got ${describeValue(description)}.`,
      );
    }
    const schemaProblem = jsonSchemaProblem(parameters, true);
    if (schemaProblem !== null) return invalid(`${path}.parameters`, schemaProblem);
    if (names.has(name)) return invalid(`${path}.name`, `${describeValue(name)} names an earlier tool too.`);
    names.add(name);
  }
  const choice = request.toolChoice;
  if (choice.type === 'function' && !names.has(choice.name)) {
    return invalid('tool_choice', `the function ${describeValue(choice.name)} is not one of 'tools'.`);
  }
  const format = request.responseFormat;
  if (format.type === 'json_schema') {
    if (!TOOL_NAME_PATTERN.test(format.name)) {
      return invalid(
        'response_format.json_schema.name',
        `expected ${NAME_PROBLEM}, got ${describeValue(format.name)}.`,
      );
    }
    const schemaProblem = jsonSchemaProblem(format.schema, false);
    if (schemaProblem !== null) return invalid('response_format.json_schema.schema', schemaProblem);
  }
  return null;
}

/** The tool loop: a tool message answers a call of an earlier assistant message. */
function toolLoopProblem(messages: readonly InferenceMessage[]): FieldProblem | null {
  let callIds: Set<string> | null = null;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'assistant') {
      if (message.toolCalls !== undefined) {
        callIds ??= new Set();
        for (const call of message.toolCalls) callIds.add(call.id);
      } else if (message.content === null) {
        return invalid(`messages[${i}].content`, `expected content, tool_calls or a refusal, got none.`);
      }
    } else if (message.role === 'tool' && (callIds === null || !callIds.has(message.toolCallId))) {
      return invalid(
        `messages[${i}].tool_call_id`,
        `${describeValue(message.toolCallId)} answers no tool call of an earlier assistant message.`,
      );
    }
  }
  return null;
}

/** The first rule the request breaks, by neutral path, or null. */
export function chatRequestProblem(
  request: ChatRequest,
  limits: Readonly<RequestSizeLimits>,
): FieldProblem | null {
  if (request.messages.length === 0) {
    return invalid('messages', `expected at least ${CHAT_LIMITS.messages.min} message, got an array of 0.`);
  }
  const size = sizeProblem(request, limits);
  if (size !== null) return size;
  for (let i = 0; i < request.messages.length; i++) {
    const problem = messageProblem(request.messages[i]!, i);
    if (problem !== null) return problem;
  }
  for (let s = 0; s < request.stop.length; s++) {
    const stop = request.stop[s]!;
    if (stop.length === 0 || stop.length > STOP_MAX_LENGTH) {
      return invalid(
        'stop',
        `expected each stop sequence to be a string of 1 to ${STOP_MAX_LENGTH} characters, got ${describeValue(stop)}.`,
      );
    }
  }
  const { maxTokens: bound } = CHAT_LIMITS;
  if (request.maxTokens !== null && (request.maxTokens < bound.min || request.maxTokens > bound.max)) {
    return invalid(
      'max_tokens',
      `expected an integer between ${bound.min} and ${bound.max}, got ${describeValue(request.maxTokens)}.`,
    );
  }
  const { user } = request;
  if (user !== null && user.length > MODEL_REQUEST_LIMITS.user.maxLength) {
    return invalid(
      'user',
      `expected a string of at most ${MODEL_REQUEST_LIMITS.user.maxLength} characters, got ${describeValue(user)}.`,
    );
  }
  return toolsProblem(request) ?? toolLoopProblem(request.messages);
}
