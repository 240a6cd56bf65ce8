import { CHAT_LIMITS, GatewayError, TOOL_LIMITS } from '@mgw/contracts';
import {
  MESSAGE_ROLES,
  type FunctionTool,
  type InputContentPart,
  type InputItem,
  type ResponseEcho,
  type ResponsesRequest,
  type ResponseToolChoice,
  type TextFormat,
} from './responses.types';

/** Hosted tools no backend here runs: left out of what the model sees, counted by type. */
export const HOSTED_TOOL_TYPES: ReadonlySet<string> = new Set([
  'web_search',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'web_search_2025_08_26',
  'file_search',
  'code_interpreter',
  'computer_use',
  'computer_use_preview',
  'image_generation',
  'mcp',
  'local_shell',
  'shell',
  'apply_patch',
  'custom',
]);

/** Fields of a body this gateway knows; any other is refused, as OpenAI does. */
const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'temperature',
  'top_p',
  'max_output_tokens',
  'stream',
  'stream_options',
  'store',
  'previous_response_id',
  'metadata',
  'background',
  'truncation',
  'reasoning',
  'include',
  'user',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'service_tier',
  'client_metadata',
  'top_logprobs',
  'max_tool_calls',
]);

const ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'item_reference', 'reasoning'];
const CONTENT_TYPES = ['input_text', 'output_text', 'refusal', 'input_image'];
const TOOL_CHOICE_MODES = ['none', 'auto', 'required'];
const TRUNCATIONS = ['auto', 'disabled'];
const METADATA_LIMITS = { pairs: 16, keyLength: 64, valueLength: 512 };

type Plain = Record<string, unknown>;

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function invalidType(param: string, expected: string, value: unknown): GatewayError {
  return GatewayError.invalidRequest(
    `Invalid type for '${param}': expected ${expected}, but got ${kindOf(value)} instead.`,
    param,
    'invalid_type',
  );
}

function invalidValue(param: string, value: unknown, supported: readonly string[]): GatewayError {
  return GatewayError.invalidRequest(
    `Invalid value: '${String(value)}'. Supported values are: ${supported.map((s) => `'${s}'`).join(', ')}.`,
    param,
    'invalid_value',
  );
}

function missing(param: string): GatewayError {
  return GatewayError.invalidRequest(
    `Missing required parameter: '${param}'.`,
    param,
    'missing_required_parameter',
  );
}

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(value: unknown, param: string): Plain {
  if (!isPlain(value)) throw invalidType(param, 'an object', value);
  return value;
}

function string(value: unknown, param: string): string {
  if (value === undefined) throw missing(param);
  if (typeof value !== 'string') throw invalidType(param, 'a string', value);
  return value;
}

function optionalString(value: unknown, param: string): string | undefined {
  return value === undefined || value === null ? undefined : string(value, param);
}

function optionalNumber(
  value: unknown,
  param: string,
  min: number,
  max: number,
  integer = false,
): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw invalidType(param, integer ? 'an integer' : 'a number', value);
  }
  if (value < min || value > max) {
    throw GatewayError.invalidRequest(
      `Invalid '${param}': ${value} is out of range; expected a value from ${min} to ${max}.`,
      param,
      'invalid_value',
    );
  }
  return value;
}

function optionalBoolean(value: unknown, param: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw invalidType(param, 'a boolean', value);
  return value;
}

function contentPart(value: unknown, param: string): InputContentPart {
  const part = object(value, param);
  const type = string(part.type, `${param}.type`);
  switch (type) {
    case 'input_text':
    case 'output_text':
      string(part.text, `${param}.text`);
      break;
    case 'refusal':
      string(part.refusal, `${param}.refusal`);
      break;
    case 'input_image':
      if (part.image_url === undefined && part.file_id === undefined) throw missing(`${param}.image_url`);
      optionalString(part.image_url, `${param}.image_url`);
      if (part.file_id !== undefined && part.file_id !== null) {
        throw GatewayError.invalidRequest(
          `Invalid '${param}.file_id': this gateway stores no files; send the image as 'image_url' (a URL or a data URL).`,
          `${param}.file_id`,
          'unsupported_value',
        );
      }
      break;
    default:
      throw invalidValue(`${param}.type`, type, CONTENT_TYPES);
  }
  return part as unknown as InputContentPart;
}

function content(value: unknown, param: string): string | InputContentPart[] {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) throw invalidType(param, 'a string or an array of content parts', value);
  return value.map((part, index) => contentPart(part, `${param}[${index}]`));
}

function inputItem(value: unknown, param: string): InputItem {
  const item = object(value, param);
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  if (type === undefined) throw missing(`${param}.type`);
  switch (type) {
    case 'message': {
      const role = string(item.role, `${param}.role`);
      if (!(MESSAGE_ROLES as readonly string[]).includes(role))
        throw invalidValue(`${param}.role`, role, MESSAGE_ROLES);
      if (item.content === undefined) throw missing(`${param}.content`);
      return { ...item, type: 'message', content: content(item.content, `${param}.content`) } as InputItem;
    }
    case 'function_call':
      string(item.call_id, `${param}.call_id`);
      string(item.name, `${param}.name`);
      string(item.arguments, `${param}.arguments`);
      return item as unknown as InputItem;
    case 'function_call_output':
      string(item.call_id, `${param}.call_id`);
      if (item.output === undefined) throw missing(`${param}.output`);
      content(item.output, `${param}.output`);
      return item as unknown as InputItem;
    case 'item_reference':
      string(item.id, `${param}.id`);
      return item as unknown as InputItem;
    case 'reasoning':
      return item as unknown as InputItem;
    default:
      throw invalidValue(`${param}.type`, type, ITEM_TYPES);
  }
}

function input(value: unknown): InputItem[] {
  if (value === undefined) throw missing('input');
  if (typeof value === 'string') return [{ type: 'message', role: 'user', content: value }];
  if (!Array.isArray(value)) throw invalidType('input', 'a string or an array of input items', value);
  if (value.length > CHAT_LIMITS.messages.max) {
    throw GatewayError.invalidRequest(
      `Invalid 'input': an array of at most ${CHAT_LIMITS.messages.max} items expected, got ${value.length}.`,
      'input',
      'array_above_max_length',
    );
  }
  return value.map((item, index) => inputItem(item, `input[${index}]`));
}

function functionTool(tool: Plain, param: string): FunctionTool {
  const name = string(tool.name, `${param}.name`);
  const parameters = tool.parameters;
  if (parameters !== undefined && parameters !== null) object(parameters, `${param}.parameters`);
  return {
    type: 'function',
    name,
    ...(tool.description !== undefined && {
      description: optionalString(tool.description, `${param}.description`) ?? null,
    }),
    ...(isPlain(parameters) && { parameters }),
    ...(tool.strict !== undefined && {
      strict: tool.strict === null ? null : optionalBoolean(tool.strict, `${param}.strict`, true),
    }),
  };
}

/** Function tools as the model sees them (namespaces flattened), and the hosted tools left out. */
function tools(value: unknown): Pick<ResponsesRequest, 'tools' | 'hostedTools'> {
  const result: Pick<ResponsesRequest, 'tools' | 'hostedTools'> = { tools: [], hostedTools: [] };
  if (value === undefined || value === null) return result;
  if (!Array.isArray(value)) throw invalidType('tools', 'an array of tools', value);
  value.forEach((raw, index) => {
    const param = `tools[${index}]`;
    const tool = object(raw, param);
    const type = string(tool.type, `${param}.type`);
    if (type === 'function') {
      result.tools.push({ tool: functionTool(tool, param), param });
    } else if (type === 'namespace') {
      // A group of function tools (Codex sends these): the model sees its members.
      const members = tool.tools;
      if (!Array.isArray(members)) throw invalidType(`${param}.tools`, 'an array of function tools', members);
      members.forEach((member, at) => {
        const memberParam = `${param}.tools[${at}]`;
        const fn = object(member, memberParam);
        if (fn.type !== 'function') throw invalidValue(`${memberParam}.type`, fn.type, ['function']);
        result.tools.push({ tool: functionTool(fn, memberParam), param: memberParam });
      });
    } else if (HOSTED_TOOL_TYPES.has(type)) {
      result.hostedTools.push(type);
    } else {
      throw invalidValue(`${param}.type`, type, ['function', 'namespace', ...HOSTED_TOOL_TYPES]);
    }
  });
  if (result.tools.length > TOOL_LIMITS.tools.max) {
    throw GatewayError.invalidRequest(
      `Invalid 'tools': at most ${TOOL_LIMITS.tools.max} function tools expected, got ${result.tools.length}.`,
      'tools',
      'array_above_max_length',
    );
  }
  return result;
}

function toolChoice(value: unknown): ResponseToolChoice {
  if (value === undefined || value === null) return 'auto';
  if (typeof value === 'string') {
    if (!TOOL_CHOICE_MODES.includes(value)) throw invalidValue('tool_choice', value, TOOL_CHOICE_MODES);
    return value as ResponseToolChoice;
  }
  const choice = object(value, 'tool_choice');
  const type = string(choice.type, 'tool_choice.type');
  if (type === 'function') return { type, name: string(choice.name, 'tool_choice.name') };
  return choice as ResponseToolChoice;
}

function textFormat(value: unknown): { format: TextFormat; verbosity?: string } {
  if (value === undefined || value === null) return { format: { type: 'text' } };
  const text = object(value, 'text');
  const verbosity = optionalString(text.verbosity, 'text.verbosity');
  const raw = text.format;
  if (raw === undefined || raw === null) return { format: { type: 'text' }, ...(verbosity && { verbosity }) };
  const format = object(raw, 'text.format');
  const type = string(format.type, 'text.format.type');
  switch (type) {
    case 'text':
    case 'json_object':
      return { format: { type }, ...(verbosity && { verbosity }) };
    case 'json_schema': {
      const name = string(format.name, 'text.format.name');
      if (format.schema === undefined) throw missing('text.format.schema');
      const schema = object(format.schema, 'text.format.schema');
      const description = optionalString(format.description, 'text.format.description');
      const strict =
        format.strict === null ? null : optionalBoolean(format.strict, 'text.format.strict', false);
      return {
        format: { type, name, schema, ...(description !== undefined && { description }), strict },
        ...(verbosity && { verbosity }),
      };
    }
    default:
      throw invalidValue('text.format.type', type, ['text', 'json_object', 'json_schema']);
  }
}

function metadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  const pairs = object(value, 'metadata');
  const entries = Object.entries(pairs);
  if (entries.length > METADATA_LIMITS.pairs) {
    throw GatewayError.invalidRequest(
      `Invalid 'metadata': at most ${METADATA_LIMITS.pairs} pairs expected, got ${entries.length}.`,
      'metadata',
      'object_above_max_properties',
    );
  }
  for (const [key, entry] of entries) {
    if (key.length > METADATA_LIMITS.keyLength) {
      throw GatewayError.invalidRequest(
        `Invalid 'metadata': key '${key.slice(0, 80)}' is longer than ${METADATA_LIMITS.keyLength} characters.`,
        'metadata',
      );
    }
    if (typeof entry !== 'string') throw invalidType(`metadata.${key}`, 'a string', entry);
    if (entry.length > METADATA_LIMITS.valueLength) {
      throw GatewayError.invalidRequest(
        `Invalid 'metadata.${key}': longer than ${METADATA_LIMITS.valueLength} characters.`,
        `metadata.${key}`,
      );
    }
  }
  return pairs as Record<string, string>;
}

function reasoning(value: unknown): ResponseEcho['reasoning'] {
  if (value === undefined || value === null) return { effort: null, summary: null };
  const settings = object(value, 'reasoning');
  return {
    effort: optionalString(settings.effort, 'reasoning.effort') ?? null,
    summary: optionalString(settings.summary, 'reasoning.summary') ?? null,
  };
}

/**
 * A `POST /v1/responses` body checked as sent, on the plain object: every refusal is OpenAI's 400 naming the
 * `param` (`input[2].content[0].type`). Value bounds the chat request shares (temperature, schemas, sizes)
 * are checked once more when the body becomes a chat request (`toChatRequest`).
 */
export function validateResponsesRequest(body: unknown): ResponsesRequest {
  if (!isPlain(body))
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${kindOf(body)}.`);
  for (const field of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(field)) {
      throw GatewayError.invalidRequest(`Unknown parameter: '${field}'.`, field, 'unknown_parameter');
    }
  }
  const model = optionalString(body.model, 'model');
  const instructions = optionalString(body.instructions, 'instructions') ?? null;
  const { tools: functionTools, hostedTools } = tools(body.tools);
  const choice = toolChoice(body.tool_choice);
  const text = textFormat(body.text);
  const temperature = optionalNumber(body.temperature, 'temperature', 0, 2);
  const topP = optionalNumber(body.top_p, 'top_p', 0, 1);
  const maxOutputTokens = optionalNumber(body.max_output_tokens, 'max_output_tokens', 16, 1_000_000, true);
  const stream = optionalBoolean(body.stream, 'stream', false);
  const store = optionalBoolean(body.store, 'store', true);
  const background = optionalBoolean(body.background, 'background', false);
  if (background && !store) {
    throw GatewayError.invalidRequest(
      "Invalid 'background': background responses must be stored (store: true).",
      'background',
      'invalid_value',
    );
  }
  const parallelToolCalls = optionalBoolean(body.parallel_tool_calls, 'parallel_tool_calls', true);
  const previousResponseId = optionalString(body.previous_response_id, 'previous_response_id') ?? null;
  const truncation = optionalString(body.truncation, 'truncation') ?? 'disabled';
  if (!TRUNCATIONS.includes(truncation)) throw invalidValue('truncation', truncation, TRUNCATIONS);
  if (body.include !== undefined && body.include !== null && !Array.isArray(body.include)) {
    throw invalidType('include', 'an array of strings', body.include);
  }
  if (body.client_metadata !== undefined && body.client_metadata !== null)
    object(body.client_metadata, 'client_metadata');
  const pairs = metadata(body.metadata);
  const user = optionalString(body.user, 'user');
  const safetyIdentifier = optionalString(body.safety_identifier, 'safety_identifier');
  const promptCacheKey = optionalString(body.prompt_cache_key, 'prompt_cache_key');
  const serviceTier = optionalString(body.service_tier, 'service_tier') ?? 'auto';
  const items = input(body.input);
  return {
    model,
    input: items,
    instructions,
    tools: functionTools,
    hostedTools,
    toolChoice: choice,
    parallelToolCalls,
    textFormat: text.format,
    temperature,
    topP,
    maxOutputTokens,
    stream,
    store,
    background,
    previousResponseId,
    metadata: pairs,
    echo: {
      instructions,
      max_output_tokens: maxOutputTokens,
      metadata: pairs,
      parallel_tool_calls: parallelToolCalls,
      previous_response_id: previousResponseId,
      reasoning: reasoning(body.reasoning),
      service_tier: serviceTier,
      store,
      temperature: temperature ?? 1,
      text,
      tool_choice: choice,
      tools: functionTools.map(({ tool }) => ({
        strict: true,
        description: null,
        parameters: null,
        ...tool,
      })),
      top_p: topP ?? 1,
      truncation,
      user: user ?? null,
      background,
      prompt_cache_key: promptCacheKey ?? null,
      safety_identifier: safetyIdentifier ?? null,
    },
    passThrough: { user, safety_identifier: safetyIdentifier, prompt_cache_key: promptCacheKey },
  };
}
