import { readServerSentEvents } from './server-sent-events.reader';

async function* chunks(...parts: Array<string | Buffer>): AsyncGenerator<string | Buffer> {
  for (const part of parts) yield await Promise.resolve(part); // each part arrives on its own
}

async function collect(body: AsyncIterable<string | Buffer>): Promise<string[]> {
  const data: string[] = [];
  for await (const event of readServerSentEvents(body)) data.push(event.data);
  return data;
}

describe('readServerSentEvents', () => {
  it('yields each event as soon as its chunk completes it, across chunk boundaries', async () => {
    const seen: string[] = [];
    const body = (async function* () {
      yield await Promise.resolve('data: {"a":1}\n\nda');
      // By the time the next chunk is asked for, the first event must already be out.
      seen.push('second chunk');
      yield await Promise.resolve('ta: {"b":2}\n\n: keep-alive\n\ndata: [DONE]\n\n');
    })();
    for await (const event of readServerSentEvents(body)) seen.push(event.data);
    expect(seen).toEqual(['{"a":1}', 'second chunk', '{"b":2}', '[DONE]']);
  });

  it('decodes UTF-8 split between chunks', async () => {
    const bytes = Buffer.from('data: héllo ✓\n\n');
    expect(await collect(chunks(bytes.subarray(0, 8), bytes.subarray(8, 17), bytes.subarray(17)))).toEqual([
      'héllo ✓',
    ]);
  });

  it('drops an event cut off before its blank line', async () => {
    expect(await collect(chunks('data: one\n\ndata: tw'))).toEqual(['one']);
  });

  it('fails a stream whose event grows past the limit', async () => {
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const event of readServerSentEvents(
          chunks('data: ok\n\ndata: ', 'x'.repeat(50), 'x'.repeat(50)),
          64,
        ))
          seen.push(event.data);
      })(),
    ).rejects.toThrow('The upstream model server sent a stream event of more than 64 characters.');
    expect(seen).toEqual(['ok']);
  });
});
