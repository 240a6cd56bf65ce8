/**
 * "Copy as curl" and "Copy as openai SDK code" for the request on screen. The key is never part of a
 * snippet: both read it from $OPENAI_API_KEY, which the SDK also reads by itself.
 */

export type SnippetOperation = 'chat' | 'images';

const PATHS: Record<SnippetOperation, string> = {
  chat: '/v1/chat/completions',
  images: '/v1/images/generations',
};

/** A POSIX shell single-quoted word. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function curlSnippet(origin: string, operation: SnippetOperation, body: object): string {
  const streams = (body as { stream?: unknown }).stream === true;
  return [
    `curl ${streams ? '-N ' : ''}${origin}${PATHS[operation]} \\`,
    '  -H "Authorization: Bearer $OPENAI_API_KEY" \\',
    "  -H 'Content-Type: application/json' \\",
    `  -d ${shellQuote(JSON.stringify(body))}`,
  ].join('\n');
}

/** A JS object literal of `value`: JSON with the quotes dropped from keys that are identifiers. */
function literal(value: object): string {
  return JSON.stringify(value, null, 2).replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, '$1$2:');
}

export function sdkSnippet(origin: string, operation: SnippetOperation, body: object): string {
  const head = [
    "import OpenAI from 'openai';",
    '',
    '// The key comes from OPENAI_API_KEY.',
    `const client = new OpenAI({ baseURL: ${JSON.stringify(`${origin}/v1`)} });`,
    '',
  ];
  if (operation === 'images') {
    return [
      ...head,
      `const result = await client.images.generate(${literal(body)});`,
      'for (const image of result.data ?? []) console.log(image.b64_json?.length, image.revised_prompt);',
    ].join('\n');
  }
  if ((body as { stream?: unknown }).stream === true) {
    return [
      ...head,
      `const stream = await client.chat.completions.create(${literal(body)});`,
      'for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");',
    ].join('\n');
  }
  return [
    ...head,
    `const completion = await client.chat.completions.create(${literal(body)});`,
    'console.log(completion.choices[0]?.message.content);',
  ].join('\n');
}
