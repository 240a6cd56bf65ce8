// The baseline every gateway figure is compared with: the same simulator backends, called in-process behind
// bare Fastify routes, answering with the same JSON and SSE bytes (the gateway's own serializers, assembler
// and SSE writer from dist/). No auth, validation, queue, worker or Redis: what remains is the floor of
// "HTTP + simulator", so gateway − baseline is what the gateway+queue+worker path adds.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// Node globals that the lint config does not declare for .mjs files.
const { AbortController } = globalThis;
const require = createRequire(import.meta.url);
const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const dist = (path) => require(join(root, process.env.BENCH_DIST || 'dist', 'libs', path));

require('reflect-metadata');
const Fastify = require('fastify');
const inferenceLib = dist('inference/src/index.js');
const { toImageInferenceRequest } = inferenceLib;
// A chat body's neutral request is made in the request lib; an older build (BENCH_DIST) makes it in
// contracts, or before the neutral request in inference.
const requestLib = () => {
  try {
    return dist('request/src/index.js');
  } catch {
    return dist('contracts/src/index.js');
  }
};
const toChatInferenceRequest = inferenceLib.toChatInferenceRequest ?? requestLib().chatRequestOfBody;
// The backend factory's home since each backend kind is its own lib; an older build (BENCH_DIST) has it in
// inference.
const backendFactory = () => {
  try {
    return dist('worker/src/backend.factory.js');
  } catch {
    return dist('inference/src/index.js');
  }
};
const { createChatBackend, createImageBackend } = backendFactory();
// The chat front-end's home since libs/api was split into rooms; an older build (BENCH_DIST) has it there.
const chatApi = (file) => {
  try {
    return dist(`chat-api/src/${file}`);
  } catch {
    return dist(`api/src/chat/${file}`);
  }
};
const { ChatChunkSerializer } = chatApi('chat-chunk.serializer.js');
const { CompletionAssembler } = chatApi('completion.assembler.js');
// The writer's home since the request core was split out of libs/api; an older build (BENCH_DIST) has it there.
const { SseWriter } = (() => {
  try {
    return dist('http/src/sse.writer.js');
  } catch {
    return dist('api/src/http/sse.writer.js');
  }
})();

const { parseCatalog } = dist('config/src/index.js');
const catalogPath = process.env.BENCH_CATALOG_PATH;
const catalog = parseCatalog(readFileSync(catalogPath, 'utf8'), catalogPath);
const settings = { simChatTtftMs: 0, simChatTokensPerS: 0, simImageLatencyMs: 0 };
const chat = new Map();
const images = new Map();
for (const model of catalog.models) {
  if (model.kind === 'chat') chat.set(model.id, createChatBackend(model, settings));
  else if (model.kind === 'image') images.set(model.id, createImageBackend(model, settings));
  // Embedding models have no baseline: S9 compares the gateway with itself (batching on and off).
}
const modelsBody = process.env.BENCH_MODELS_BODY ?? '{"object":"list","data":[]}';

const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024, genReqId: () => randomUUID() });

app.get('/healthz', async () => ({ status: 'ok' }));

app.get('/v1/models', (_request, reply) => {
  reply.header('content-type', 'application/json; charset=utf-8').send(modelsBody);
});

app.post('/v1/chat/completions', async (request, reply) => {
  const body = request.body;
  const backend = chat.get(body.model);
  if (!backend) return reply.status(404).send({ error: { message: 'no such model' } });
  const created = Math.floor(Date.now() / 1000);
  const inference = toChatInferenceRequest(body);
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client closed'));
  });
  const finishReasons = [];
  let usage = null;
  const done = () => ({
    requestId: String(request.id),
    seq: 0,
    kind: 'chat-done',
    finishReasons,
    usage,
  });
  if (body.stream !== true) {
    const assembler = new CompletionAssembler(String(request.id), body.model, created);
    for await (const event of backend.generate(inference, controller.signal)) {
      if (event.type === 'delta') assembler.add(event.choice, event.text);
      else if (event.type === 'finish') finishReasons[event.choice] = event.reason;
      else usage = { prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens };
    }
    return reply.status(200).send(assembler.finish(done()));
  }
  const chunks = new ChatChunkSerializer(String(request.id), body.model, created);
  const sse = new SseWriter(reply.raw, {
    bufferLimitBytes: 1024 * 1024,
    keepAliveMs: 0,
    onOverflow: () => controller.abort(new Error('overflow')),
  });
  reply.hijack();
  sse.open({ 'x-request-id': String(request.id) });
  try {
    for await (const event of backend.generate(inference, controller.signal)) {
      if (event.type === 'delta') {
        if (event.text.length > 0) sse.data(chunks.delta(event.choice, event.text));
      } else if (event.type === 'finish') finishReasons[event.choice] = event.reason;
      else usage = { prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens };
    }
    sse.data(chunks.final(done()));
    sse.done();
  } catch {
    sse.close();
  }
});

// The Responses API front-end's own validation, translation and renderers; an older build has none.
const responsesApi = (() => {
  try {
    return dist('responses-api/src/index.js');
  } catch {
    return null;
  }
})();
const { REQUEST_SIZE_CEILINGS } = dist('contracts/src/index.js');

if (responsesApi !== null) {
  app.post('/v1/responses', async (request, reply) => {
    const parsed = responsesApi.validateResponsesRequest(request.body);
    // Since the neutral request, the translator makes it (with its origins) from the history and the input.
    const translated =
      responsesApi.toChatRequest.length === 4
        ? responsesApi.toChatRequest(parsed, [], parsed.input, REQUEST_SIZE_CEILINGS)
        : null;
    const body =
      translated?.request ?? responsesApi.toChatRequest(parsed, parsed.input, REQUEST_SIZE_CEILINGS);
    const model = translated === null ? body.model : parsed.model;
    const backend = chat.get(model);
    if (!backend) return reply.status(404).send({ error: { message: 'no such model' } });
    const controller = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) controller.abort(new Error('client closed'));
    });
    const base = {
      requestId: String(request.id),
      model,
      createdMs: Date.now(),
      echo: parsed.echo,
    };
    const finishReasons = [];
    let usage = null;
    const done = () => ({ requestId: String(request.id), seq: 0, kind: 'chat-done', finishReasons, usage });
    const generate = async (renderer) => {
      const inference = translated === null ? toChatInferenceRequest(body) : body;
      for await (const event of backend.generate(inference, controller.signal)) {
        if (event.type === 'delta') {
          if (event.text.length > 0) renderer.delta(event.choice, event.text);
        } else if (event.type === 'finish') finishReasons[event.choice] = event.reason;
        else usage = { prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens };
      }
    };
    if (!parsed.stream) {
      const renderer = new responsesApi.ResponseJsonRenderer(base, () => controller.abort());
      await generate(renderer);
      return reply.status(200).send(await renderer.done(done()));
    }
    const sse = new SseWriter(reply.raw, {
      bufferLimitBytes: 1024 * 1024,
      keepAliveMs: 0,
      endLine: null,
      onOverflow: () => controller.abort(new Error('overflow')),
    });
    reply.hijack();
    sse.open({ 'x-request-id': String(request.id) });
    const renderer = new responsesApi.ResponseEventsRenderer(sse, base);
    try {
      await generate(renderer);
      renderer.done(done());
    } catch {
      sse.close();
    }
  });
}

app.post('/v1/images/generations', async (request, reply) => {
  const body = request.body;
  const backend = images.get(body.model);
  if (!backend) return reply.status(404).send({ error: { message: 'no such model' } });
  const created = Math.floor(Date.now() / 1000);
  const data = [];
  const controller = new AbortController();
  for await (const image of backend.generate(toImageInferenceRequest(body), controller.signal)) {
    data[image.index] = { b64_json: image.png.toString('base64'), revised_prompt: image.revisedPrompt };
  }
  return reply.status(200).send({ created, data });
});

await app.listen({ port: Number(process.env.BENCH_BASELINE_PORT), host: '127.0.0.1' });
const close = () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', close);
process.once('SIGINT', close);
