// Micro-benchmark of request validation per protocol: a typical and a large valid body for
// `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages` and
// `POST /v1/messages/count_tokens`, `POST /v1/embeddings` and `POST /v1/images/generations`, timed in µs per
// body.
// It bundles the validators of a source tree with esbuild (no build needed), so two trees compare:
//   node bench/validation.micro.mjs                 # this tree
//   node bench/validation.micro.mjs /path/to/other  # and another checkout (e.g. before a change), alternated
import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

/** The validators of the source tree at `root`, bundled by esbuild. */
async function validatorsOf(root) {
  /** Where each tree keeps its validators: the first file that exists. */
  const firstOf = (...files) => files.find((file) => existsSync(join(root, `${file}.ts`)));
  const responses = firstOf(
    'libs/responses-api/src/responses-request.schema',
    'libs/responses-api/src/responses-request.validator',
  );
  const messages = firstOf(
    'libs/anthropic-api/src/messages-request.schema',
    'libs/anthropic-api/src/messages-request.validator',
  );
  // Chat Completions: its schema's validator, or in a tree before it the class-validator DTO.
  const chat = existsSync(join(root, 'libs/contracts/src/chat/chat-request.validator.ts'))
    ? `export { validateChatRequest } from './libs/contracts/src/chat/chat-request.validator';`
    : `import { validateDto } from './libs/contracts/src/dto/validate-dto';
import { ChatCompletionRequestDto } from './libs/contracts/src/dto/chat-completion-request.dto';
export const validateChatRequest = (body) => validateDto(ChatCompletionRequestDto, body);`;
  // Embeddings and images: their schemas' validators, or in a tree before them the class-validator DTOs.
  const media = existsSync(join(root, 'libs/contracts/src/dto/embedding-request.schema.ts'))
    ? `export { validateEmbeddingBody } from './libs/contracts/src/dto/embedding-request.schema';
export { validateImageGenerationBody } from './libs/contracts/src/dto/image-generation-request.schema';`
    : `import { validateDto as validateMedia } from './libs/contracts/src/dto/validate-dto';
import { EmbeddingRequestDto } from './libs/contracts/src/dto/embedding-request.dto';
import { ImageGenerationRequestDto } from './libs/contracts/src/dto/image-generation-request.dto';
export const validateEmbeddingBody = (body) => validateMedia(EmbeddingRequestDto, body);
export const validateImageGenerationBody = (body) => validateMedia(ImageGenerationRequestDto, body);`;
  const entry = `
export { validateResponsesRequest } from './${responses}';
export { validateMessagesRequest, validateCountTokensRequest } from './${messages}';
${chat}
${media}
`;
  const bundle = await build({
    stdin: { contents: entry, resolveDir: root, loader: 'ts' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    tsconfig: join(root, 'tsconfig.json'),
    packages: 'external',
    logLevel: 'error',
  });
  // The bundle's packages resolve from the tree's own node_modules.
  const require = createRequire(join(root, 'package.json'));
  require('reflect-metadata');
  const module = { exports: {} };
  new Function('require', 'module', 'exports', '__dirname', bundle.outputFiles[0].text)(
    require,
    module,
    module.exports,
    root,
  );
  return module.exports;
}

const roots = [resolve('.'), ...(process.argv[2] === undefined ? [] : [resolve(process.argv[2])])];
const trees = await Promise.all(roots.map(async (root) => ({ root, validators: await validatorsOf(root) })));

const text = (n) => 'lorem ipsum dolor sit amet '.repeat(n);
const tool = (i) => ({
  name: `tool_${i}`,
  description: text(4),
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string' }, limit: { type: 'integer', minimum: 1 } },
    required: ['path'],
  },
});

/** A Claude Code turn: system blocks, tools, a tool round trip. */
function messagesBody(turns, withMaxTokens = true) {
  const messages = [{ role: 'user', content: [{ type: 'text', text: text(20) }] }];
  for (let i = 0; i < turns; i++) {
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: text(5) },
        { type: 'tool_use', id: `toolu_${i}`, name: 'tool_0', input: { path: 'a.txt' } },
      ],
    });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: `toolu_${i}`, content: [{ type: 'text', text: text(10) }] },
        { type: 'text', text: text(3) },
      ],
    });
  }
  return {
    model: 'claude-sonnet-4-5',
    ...(withMaxTokens && { max_tokens: 4096, stream: true }),
    system: [{ type: 'text', text: text(30), cache_control: { type: 'ephemeral' } }],
    messages,
    tools: Array.from({ length: 8 }, (_, i) => tool(i)),
    metadata: { user_id: 'u' },
    temperature: 1,
  };
}

/** A Codex turn: instructions, function tools, a call and its output per round. */
function responsesBody(rounds) {
  const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: text(20) }] }];
  for (let i = 0; i < rounds; i++) {
    input.push({ type: 'function_call', call_id: `call_${i}`, name: 'shell', arguments: '{"cmd":"ls"}' });
    input.push({ type: 'function_call_output', call_id: `call_${i}`, output: text(10) });
    input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: text(5) }] });
  }
  return {
    model: 'gpt-x',
    instructions: text(30),
    input,
    tools: Array.from({ length: 8 }, (_, i) => ({
      type: 'function',
      name: `tool_${i}`,
      description: text(4),
      parameters: tool(i).input_schema,
    })),
    tool_choice: 'auto',
    stream: true,
    store: false,
    reasoning: { summary: 'auto' },
    include: ['reasoning.encrypted_content'],
    metadata: { session: 's' },
  };
}

/** The S1 body: one short question. */
const chatS1 = () => ({
  model: 'sim-chat',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'Hello there!' }],
});

/** A tool loop: system prompt, tools, and a call and its result per round. */
function chatBody(rounds) {
  const messages = [
    { role: 'system', content: text(30) },
    { role: 'user', content: [{ type: 'text', text: text(20) }] },
  ];
  for (let i = 0; i < rounds; i++) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: `call_${i}`, type: 'function', function: { name: 'tool_0', arguments: '{"path":"a"}' } },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: text(10) });
  }
  return {
    model: 'sim-chat',
    stream: true,
    messages,
    tools: Array.from({ length: 8 }, (_, i) => ({
      type: 'function',
      function: { name: `tool_${i}`, description: text(4), parameters: tool(i).input_schema },
    })),
    tool_choice: 'auto',
    temperature: 0.7,
  };
}

/** An embeddings request of `inputs` texts (one is what S9 sends). */
const embeddingsBody = (inputs) => ({
  model: 'sim-embed',
  input: inputs === 1 ? text(8) : Array.from({ length: inputs }, (_, i) => `${i} ${text(8)}`),
  encoding_format: 'float',
});

/** An image request as the OpenAI SDK sends it (S6's body). */
const imageBody = () => ({
  model: 'sim-image',
  prompt: text(12),
  n: 1,
  size: '1024x1024',
  response_format: 'b64_json',
});

/** µs per body of one round of `validate` over `body`. */
function round(validate, body, perRound) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < perRound; i++) validate(body);
  return Number(process.hrtime.bigint() - start) / 1000 / perRound;
}

const ROUNDS = 15;
const cases = [
  ['chat S1 (one question)', 'validateChatRequest', chatS1()],
  ['chat typical (3 tool rounds)', 'validateChatRequest', chatBody(3)],
  ['chat large (1,000 tool rounds)', 'validateChatRequest', chatBody(1000)],
  ['responses typical (3 rounds)', 'validateResponsesRequest', responsesBody(3)],
  ['responses large (1,000 rounds)', 'validateResponsesRequest', responsesBody(1000)],
  ['messages typical (3 turns)', 'validateMessagesRequest', messagesBody(3)],
  ['messages large (1,000 turns)', 'validateMessagesRequest', messagesBody(1000)],
  ['count_tokens typical (3 turns)', 'validateCountTokensRequest', messagesBody(3, false)],
  ['count_tokens large (1,000 turns)', 'validateCountTokensRequest', messagesBody(1000, false)],
  ['embeddings one input (S9)', 'validateEmbeddingBody', embeddingsBody(1)],
  ['embeddings 2,048 inputs', 'validateEmbeddingBody', embeddingsBody(2048)],
  ['images one prompt (S6)', 'validateImageGenerationBody', imageBody()],
];
// The trees alternate round by round, so a busy machine weighs on both alike; the minimum is the figure
// least disturbed by other load, the median the usual one.
console.log(trees.map(({ root }, at) => `${'AB'[at]}: ${root}`).join('\n'));
console.log(
  `${'body'.padEnd(34)} ${'size'.padStart(9)}  ${trees.map((_, at) => `${'AB'[at]} min / median µs`.padStart(22)).join('')}`,
);
for (const [label, name, body] of cases) {
  const perRound = Math.max(1, Math.round(2000 / (JSON.stringify(body).length / 1000 + 1)));
  const samples = trees.map(() => []);
  for (const { validators } of trees) round(validators[name], body, perRound);
  for (let r = 0; r < ROUNDS; r++)
    trees.forEach(({ validators }, at) => samples[at].push(round(validators[name], body, perRound)));
  const figures = samples.map((rounds) => {
    rounds.sort((a, b) => a - b);
    return `${rounds[0].toFixed(1)} / ${rounds[ROUNDS >> 1].toFixed(1)}`.padStart(22);
  });
  const kb = `${(JSON.stringify(body).length / 1024).toFixed(0)} KB`;
  console.log(`${label.padEnd(34)} ${kb.padStart(9)}  ${figures.join('')}`);
}
