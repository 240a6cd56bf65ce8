import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import { GGUF_ALIGNMENT } from '../fixtures/gguf/gguf.writer';
import {
  buildTinyLlamaGguf,
  TINY_LLAMA_CHAT_TEMPLATE,
  writeTinyLlamaGguf,
} from '../fixtures/gguf/tiny-llama.gguf-writer';

/** The fixture writer is checked against an independent GGUF parser (@huggingface/gguf). */
describe('the tiny llama GGUF writer', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mgw-gguf-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a GGUF whose metadata and tensor table parse back as written', async () => {
    const path = join(dir, 'tiny.gguf');
    const info = await writeTinyLlamaGguf(path, { seed: 3, layers: 2, embedding: 64, heads: 4, kvHeads: 2 });
    const parsed = await gguf(path, { allowLocalFile: true });
    const metadata = parsed.metadata as unknown as Record<string, unknown>;

    expect(metadata.version).toBe(3);
    expect(metadata['general.architecture']).toBe('llama');
    expect(metadata['llama.block_count']).toBe(2);
    expect(metadata['llama.embedding_length']).toBe(64);
    expect(metadata['llama.attention.head_count_kv']).toBe(2);
    expect(metadata['tokenizer.ggml.model']).toBe('gpt2');
    expect(metadata['tokenizer.chat_template']).toBe(TINY_LLAMA_CHAT_TEMPLATE);
    const tokens = metadata['tokenizer.ggml.tokens'] as string[];
    expect(tokens).toHaveLength(info.vocabularySize);
    expect(tokens[metadata['tokenizer.ggml.eos_token_id'] as number]).toBe('<|im_end|>');
    expect(tokens.slice(0, 256)).toHaveLength(256);
    expect(tokens[0x41]).toBe('A');
    expect(tokens[0x20]).toBe('Ġ');

    const names = parsed.tensorInfos.map((t) => t.name);
    expect(names).toHaveLength(2 + 9 * 2 + 1);
    expect(names).toEqual(
      expect.arrayContaining(['token_embd.weight', 'blk.1.ffn_down.weight', 'output.weight']),
    );
    const embd = parsed.tensorInfos.find((t) => t.name === 'token_embd.weight')!;
    expect(embd.shape).toEqual([64n, BigInt(info.vocabularySize)]);
    const k = parsed.tensorInfos.find((t) => t.name === 'blk.0.attn_k.weight')!;
    expect(k.shape).toEqual([64n, 32n]);
    for (const tensor of parsed.tensorInfos) {
      expect(tensor.dtype).toBe(0); // F32
      expect(Number(tensor.offset) % GGUF_ALIGNMENT).toBe(0);
    }
    expect(Number(parsed.tensorDataOffset) % GGUF_ALIGNMENT).toBe(0);

    // The last tensor's data ends inside the file.
    const bytes = await readFile(path);
    const last = parsed.tensorInfos.at(-1)!;
    const size = last.shape.reduce((a, b) => a * b, 1n) * 4n;
    expect(Number(parsed.tensorDataOffset + last.offset + size)).toBeLessThanOrEqual(bytes.length);
  });

  it('is deterministic for a seed and different across seeds', () => {
    const a = buildTinyLlamaGguf({ seed: 1 }).gguf;
    expect(buildTinyLlamaGguf({ seed: 1 }).gguf.equals(a)).toBe(true);
    expect(buildTinyLlamaGguf({ seed: 2 }).gguf.equals(a)).toBe(false);
  });

  it('can leave the chat template out', async () => {
    const path = join(dir, 'no-template.gguf');
    await writeTinyLlamaGguf(path, { chatTemplate: null });
    const parsed = await gguf(path, { allowLocalFile: true });
    expect(Object.keys(parsed.metadata)).not.toContain('tokenizer.chat_template');
  });
});
