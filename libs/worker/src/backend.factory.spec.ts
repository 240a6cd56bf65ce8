import { ConfigError, type CatalogModel } from '@mgw/config';
import { catalogModel } from '@mgw/testing';
import { LlamaCppChatBackend } from '@mgw/backend-llamacpp';
import { ChatSimulatorBackend, ImageSimulatorBackend } from '@mgw/backend-simulator';
import type { BackendSettings } from '@mgw/inference';
import { createChatBackend, createImageBackend } from './backend.factory';

const settings: BackendSettings = {
  simChatTtftMs: 0,
  simChatTokensPerS: 0,
  simImageLatencyMs: 0,
  concurrency: 1,
  environment: new Map(),
};

const model = (kind: 'chat' | 'image', backend: CatalogModel['backend'], id = 'm1'): CatalogModel =>
  catalogModel(kind, backend, id);

function messageOf(create: () => unknown): string {
  try {
    create();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.join('\n');
  }
  throw new Error('expected a ConfigError');
}

describe('backend factory', () => {
  it('creates the simulators', () => {
    expect(createChatBackend(model('chat', { kind: 'simulator', mode: 'words' }), settings)).toBeInstanceOf(
      ChatSimulatorBackend,
    );
    expect(createImageBackend(model('image', { kind: 'simulator' }), settings)).toBeInstanceOf(
      ImageSimulatorBackend,
    );
  });

  it('creates the llamacpp backend without loading its model, and refuses a missing GGUF', () => {
    // Any existing file passes the factory's check; the weights are only read by load().
    const backend = { kind: 'llamacpp', modelPath: 'package.json' };
    expect(
      createChatBackend(model('chat', backend), { ...settings, catalogDir: process.cwd() }),
    ).toBeInstanceOf(LlamaCppChatBackend);
    expect(
      messageOf(() =>
        createChatBackend(model('chat', { kind: 'llamacpp', modelPath: '/nope.gguf' }), settings),
      ),
    ).toBe('catalog model "m1": backend.modelPath: no GGUF file at /nope.gguf');
  });

  it('rejects an unknown backend kind, naming the model and the known kinds', () => {
    expect(messageOf(() => createChatBackend(model('chat', { kind: 'vllm' }, 'llama'), settings))).toBe(
      'catalog model "llama": backend.kind "vllm" is not a known chat backend (known: simulator, openai, llamacpp)',
    );
    expect(messageOf(() => createImageBackend(model('image', { kind: 'sdxl' }, 'pics'), settings))).toBe(
      'catalog model "pics": backend.kind "sdxl" is not a known image backend (known: simulator, openai)',
    );
  });

  it('does not resolve kinds through the object prototype', () => {
    expect(messageOf(() => createChatBackend(model('chat', { kind: 'constructor' }), settings))).toContain(
      'backend.kind "constructor" is not a known chat backend',
    );
  });

  it('refuses a model of the other kind', () => {
    expect(
      messageOf(() => createImageBackend(model('chat', { kind: 'simulator' }, 'sim-chat'), settings)),
    ).toBe('catalog model "sim-chat": is a chat model, not an image model');
  });

  it('passes option errors through', () => {
    expect(
      messageOf(() => createChatBackend(model('chat', { kind: 'simulator', mode: 'x' }), settings)),
    ).toContain('backend.mode');
  });
});
