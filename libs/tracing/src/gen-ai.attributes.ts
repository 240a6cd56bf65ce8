/**
 * Attribute names of the OpenTelemetry GenAI semantic conventions (development status, so spelled here
 * rather than imported from the conventions' incubating entry point, as that package advises), and the
 * gateway's own, under `mgw.`.
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  temperature: 'gen_ai.request.temperature',
  topP: 'gen_ai.request.top_p',
  maxTokens: 'gen_ai.request.max_tokens',
  seed: 'gen_ai.request.seed',
  presencePenalty: 'gen_ai.request.presence_penalty',
  frequencyPenalty: 'gen_ai.request.frequency_penalty',
  stopSequences: 'gen_ai.request.stop_sequences',
  choiceCount: 'gen_ai.request.choice.count',
  encodingFormats: 'gen_ai.request.encoding_formats',
  dimensions: 'gen_ai.embeddings.dimension.count',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
} as const;

export const MGW = {
  requestId: 'mgw.request_id',
  keyId: 'mgw.key_id',
  /** How many models the request went through before this one (0: the model asked for). */
  fallbackHops: 'mgw.fallback.hops',
  /** The job may still fall back to another model if it fails before any output. */
  hasFallback: 'mgw.fallback.available',
  /** The model a fallback hop went to (the server span keeps the model asked for as the request's). */
  fallbackModel: 'mgw.fallback.model',
  /** On a `mgw.fallback` event: the model that could not serve, the one tried next, and why. */
  fallbackFrom: 'mgw.fallback.from',
  fallbackTo: 'mgw.fallback.to',
  fallbackReason: 'mgw.fallback.reason',
  resumable: 'mgw.stream.resumable',
  resumed: 'mgw.stream.resumed',
  batchId: 'mgw.batch_id',
  jobPriority: 'mgw.job.priority',
  outcome: 'mgw.job.outcome',
  queueWaitMs: 'mgw.queue.wait_ms',
  batchInputs: 'mgw.embedding.batch_inputs',
} as const;

/** `gen_ai.operation.name` by model kind (an image has no operation of its own in the conventions). */
export type GenAiOperation = 'chat' | 'embeddings' | 'generate_content';

export function operationOfKind(kind: 'chat' | 'image' | 'embedding'): GenAiOperation {
  switch (kind) {
    case 'chat':
      return 'chat';
    case 'embedding':
      return 'embeddings';
    case 'image':
      return 'generate_content';
  }
}

type AttributeValue = string | number | boolean | string[];

/** The request parameters the conventions name, read from a job's request as it was sent. */
export function requestParameterAttributes(request: unknown): Record<string, AttributeValue> {
  if (typeof request !== 'object' || request === null) return {};
  const fields = request as Record<string, unknown>;
  const attributes: Record<string, AttributeValue> = {};
  const number = (name: string, field: string): void => {
    const value = fields[field];
    if (typeof value === 'number' && Number.isFinite(value)) attributes[name] = value;
  };
  number(GEN_AI.temperature, 'temperature');
  number(GEN_AI.topP, 'top_p');
  number(GEN_AI.seed, 'seed');
  number(GEN_AI.presencePenalty, 'presence_penalty');
  number(GEN_AI.frequencyPenalty, 'frequency_penalty');
  number(GEN_AI.choiceCount, 'n');
  number(GEN_AI.dimensions, 'dimensions');
  number(GEN_AI.maxTokens, 'max_tokens');
  number(GEN_AI.maxTokens, 'max_completion_tokens');
  // A job of protocol version 4 carries the neutral chat request, whose fields are camel-cased.
  number(GEN_AI.topP, 'topP');
  number(GEN_AI.presencePenalty, 'presencePenalty');
  number(GEN_AI.frequencyPenalty, 'frequencyPenalty');
  number(GEN_AI.maxTokens, 'maxTokens');
  const { stop, encoding_format: encoding } = fields;
  if (typeof stop === 'string') attributes[GEN_AI.stopSequences] = [stop];
  else if (Array.isArray(stop) && stop.every((s) => typeof s === 'string'))
    attributes[GEN_AI.stopSequences] = stop;
  if (typeof encoding === 'string') attributes[GEN_AI.encodingFormats] = [encoding];
  return attributes;
}
