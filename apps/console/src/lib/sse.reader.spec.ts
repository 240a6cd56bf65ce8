import { readSseData } from './sse.reader';

function streamOf(pieces: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  });
}

async function collect(pieces: string[]): Promise<string[]> {
  const out: string[] = [];
  for await (const data of readSseData(streamOf(pieces))) out.push(data);
  return out;
}

describe('readSseData', () => {
  it('yields each event as it completes, across chunk boundaries and line endings', async () => {
    await expect(
      collect([
        'data: {"a"',
        ':1}\n\n: keep-alive\n\nid: 3\r\ndata: x\r\n\r\ndata:y\rdata: z\r\r',
        'data: [DONE]\n\n',
      ]),
    ).resolves.toEqual(['{"a":1}', 'x', 'y\nz', '[DONE]']);
  });

  it('decodes characters split between chunks', async () => {
    const bytes = new TextEncoder().encode('data: é…\n\n');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(Uint8Array.of(byte));
        controller.close();
      },
    });
    const out: string[] = [];
    for await (const data of readSseData(stream)) out.push(data);
    expect(out).toEqual(['é…']);
  });

  it('drops an event the body ends in the middle of', async () => {
    await expect(collect(['data: whole\n\ndata: cut'])).resolves.toEqual(['whole']);
  });
});
