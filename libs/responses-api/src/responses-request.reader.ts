import type { ResponsesBody } from './responses-request.schema';
import type {
  FunctionTool,
  InputItem,
  ResponseEcho,
  ResponsesRequest,
  ResponseToolChoice,
  TextFormat,
} from './responses.types';

type BodyTool = NonNullable<ResponsesBody['tools']>[number];
type BodyFunctionTool = Extract<BodyTool, { type: 'function' }>;

function functionTool(tool: BodyFunctionTool): FunctionTool {
  return {
    type: 'function',
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    ...(tool.parameters != null && { parameters: tool.parameters }),
    ...(tool.strict !== undefined && { strict: tool.strict === null ? null : tool.strict }),
  };
}

/** Function tools as the model sees them (namespaces flattened), and the hosted tools left out. */
function tools(value: ResponsesBody['tools']): Pick<ResponsesRequest, 'tools' | 'hostedTools'> {
  const result: Pick<ResponsesRequest, 'tools' | 'hostedTools'> = { tools: [], hostedTools: [] };
  value?.forEach((tool, index) => {
    const param = `tools[${index}]`;
    if (tool.type === 'function') result.tools.push({ tool: functionTool(tool), param });
    else if (tool.type === 'namespace') {
      tool.tools.forEach((member, at) =>
        result.tools.push({ tool: functionTool(member), param: `${param}.tools[${at}]` }),
      );
    } else result.hostedTools.push(tool.type);
  });
  return result;
}

function textFormat(value: ResponsesBody['text']): { format: TextFormat; verbosity?: string } {
  const verbosity = value?.verbosity ?? undefined;
  const format = value?.format;
  const withVerbosity = verbosity ? { verbosity } : {};
  if (format == null || format.type !== 'json_schema') {
    return { format: { type: format?.type ?? 'text' }, ...withVerbosity };
  }
  const { name, schema, description } = format;
  return {
    format: {
      type: 'json_schema',
      name,
      schema,
      ...(description != null && { description }),
      strict: format.strict === undefined ? false : format.strict,
    },
    ...withVerbosity,
  };
}

function toolChoice(value: ResponsesBody['tool_choice']): ResponseToolChoice {
  if (value == null) return 'auto';
  if (typeof value === 'object' && value.type === 'function')
    return { type: 'function', name: value.name as string };
  return value;
}

function input(value: ResponsesBody['input']): InputItem[] {
  if (typeof value === 'string') return [{ type: 'message', role: 'user', content: value }];
  return value.map((item) => (item.type === undefined ? { ...item, type: 'message' } : item) as InputItem);
}

/**
 * A valid Responses body read into the request the front-end serves: OpenAI's defaults filled in, the
 * input as items, the tools split into what a model can run, and the settings a response object echoes.
 */
export function toResponsesRequest(body: ResponsesBody): ResponsesRequest {
  const instructions = body.instructions ?? null;
  const { tools: functionTools, hostedTools } = tools(body.tools);
  const choice = toolChoice(body.tool_choice);
  const text = textFormat(body.text);
  const temperature = body.temperature ?? null;
  const topP = body.top_p ?? null;
  const maxOutputTokens = body.max_output_tokens ?? null;
  const store = body.store ?? true;
  const background = body.background ?? false;
  const parallelToolCalls = body.parallel_tool_calls ?? true;
  const previousResponseId = body.previous_response_id ?? null;
  const pairs = body.metadata ?? {};
  const user = body.user ?? undefined;
  const safetyIdentifier = body.safety_identifier ?? undefined;
  const promptCacheKey = body.prompt_cache_key ?? undefined;
  const reasoning: ResponseEcho['reasoning'] = {
    effort: body.reasoning?.effort ?? null,
    summary: body.reasoning?.summary ?? null,
  };
  return {
    model: body.model ?? undefined,
    input: input(body.input),
    instructions,
    tools: functionTools,
    hostedTools,
    toolChoice: choice,
    parallelToolCalls,
    textFormat: text.format,
    temperature,
    topP,
    maxOutputTokens,
    stream: body.stream ?? false,
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
      reasoning,
      service_tier: body.service_tier ?? 'auto',
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
      truncation: body.truncation ?? 'disabled',
      user: user ?? null,
      background,
      prompt_cache_key: promptCacheKey ?? null,
      safety_identifier: safetyIdentifier ?? null,
    },
    passThrough: { user, safety_identifier: safetyIdentifier, prompt_cache_key: promptCacheKey },
  };
}
