import { readModelEntry, readModelLookup, registryAnswer } from './registry-answers.reader';
import type { ModelEntry } from './registry.messages';

const ENTRY: ModelEntry = {
  id: 'sim-chat',
  type: 'chat/compilations',
  owned_by: 'gateway',
  created: 1,
  liveWorkers: 1,
  readyWorkers: 1,
  concurrency: 8,
};

describe('the registry answers a gateway reads', () => {
  it("keeps every catalog setting the gateway acts on, the model's resume default included", () => {
    const entry: ModelEntry = {
      ...ENTRY,
      maxQueueDepth: 5,
      contextTokens: 4096,
      supportedParameters: ['tools'],
      fallbacks: ['other'],
      streamResume: 'on',
      urlInputs: 'none',
    };
    expect(readModelEntry(entry)).toEqual(entry);
    expect(readModelLookup(registryAnswer({ state: 'live', model: entry }))).toEqual({
      state: 'live',
      model: entry,
    });
  });

  it('refuses a resume default it does not know', () => {
    expect(() => readModelEntry({ ...ENTRY, streamResume: 'sometimes' })).toThrow(/streamResume/);
  });

  it('refuses a URL policy it does not know, and leaves an absent one absent (public)', () => {
    expect(() => readModelEntry({ ...ENTRY, urlInputs: 'private' })).toThrow(/urlInputs/);
    expect(readModelEntry(ENTRY)).not.toHaveProperty('urlInputs');
  });
});
