import { ConfigError, type CatalogModel } from '@mgw/config';
import { catalogModel } from '@mgw/testing';
import type { BackendSettings } from '@mgw/inference';
import { parseChatSimulatorOptions, parseImageSimulatorOptions } from './simulator.options';

const settings: BackendSettings = {
  simChatTtftMs: 100,
  simChatTokensPerS: 30,
  simImageLatencyMs: 500,
  concurrency: 1,
  environment: new Map(),
};

const model = (kind: 'chat' | 'image', backend: Record<string, unknown>, id?: string): CatalogModel =>
  catalogModel(kind, { kind: 'simulator', ...backend }, id);

function problemsOf(parse: () => unknown): string[] {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('simulator options', () => {
  it('falls back to the process-wide settings and built-in defaults', () => {
    expect(parseChatSimulatorOptions(model('chat', {}), settings)).toEqual({
      mode: 'echo',
      ttftMs: 100,
      tokensPerSecond: 30,
      maxWords: 48,
      failAfterTokens: 0,
    });
    expect(parseImageSimulatorOptions(model('image', {}), settings)).toEqual({ latencyMs: 500 });
  });

  it('lets catalog options override the settings', () => {
    const options = parseChatSimulatorOptions(
      model('chat', { mode: 'words', ttftMs: 0, tokensPerSecond: 0, maxWords: 4096, failAfterTokens: 2 }),
      settings,
    );
    expect(options).toEqual({
      mode: 'words',
      ttftMs: 0,
      tokensPerSecond: 0,
      maxWords: 4096,
      failAfterTokens: 2,
    });
    expect(parseImageSimulatorOptions(model('image', { latencyMs: 0 }), settings)).toEqual({ latencyMs: 0 });
  });

  it('names the model and the field in every problem', () => {
    expect(problemsOf(() => parseChatSimulatorOptions(model('chat', { mode: 'poetry' }), settings))).toEqual([
      `catalog model "sim-chat": backend.mode must be 'echo' or 'words'`,
    ]);
    expect(problemsOf(() => parseChatSimulatorOptions(model('chat', { maxWords: 0 }), settings))).toEqual([
      'catalog model "sim-chat": backend.maxWords must be an integer from 1 to 4096',
    ]);
    expect(problemsOf(() => parseImageSimulatorOptions(model('image', { latencyMs: -1 }), settings))).toEqual(
      ['catalog model "sim-image": backend.latencyMs must be an integer from 0 to 600000'],
    );
  });

  it('reports every problem at once, including unknown options', () => {
    const problems = problemsOf(() =>
      parseChatSimulatorOptions(
        model('chat', { ttftMs: 1.5, tokensPerSecond: '10', temperature: 0.2, latencyMs: 5 }, 'demo'),
        settings,
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'catalog model "demo": backend.ttftMs must be an integer from 0 to 600000',
        'catalog model "demo": backend.tokensPerSecond must be an integer from 0 to 1000000',
        expect.stringMatching(/^catalog model "demo": backend\.temperature is not an option/),
        expect.stringMatching(/^catalog model "demo": backend\.latencyMs is not an option/),
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  it('refuses chat options on an image model', () => {
    expect(problemsOf(() => parseImageSimulatorOptions(model('image', { mode: 'words' }), settings))).toEqual(
      ['catalog model "sim-image": backend.mode is not an option of the image simulator (known: latencyMs)'],
    );
  });
});
