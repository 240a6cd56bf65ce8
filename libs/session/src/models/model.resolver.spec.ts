import { type ModelEntry, type ModelLookup } from '@mgw/contracts';
import type { Principal } from '@mgw/access';
import type { ModelDirectory } from '@mgw/registry';
import { ModelResolver } from './model.resolver';
import { refusalOf } from '@mgw/testing';

const entry = (overrides: Partial<ModelEntry> = {}): ModelEntry => ({
  id: 'm',
  type: 'chat/compilations',
  owned_by: 'tests',
  created: 0,
  liveWorkers: 0,
  readyWorkers: 0,
  concurrency: 0,
  ...overrides,
});

function resolverFor(lookup: ModelLookup): ModelResolver {
  const models = { lookup: jest.fn(() => Promise.resolve(lookup)) };
  return new ModelResolver(models as unknown as ModelDirectory);
}

describe('ModelResolver', () => {
  it('resolves a live model without a start bound', async () => {
    const model = entry({ liveWorkers: 2, concurrency: 16, scaleToZero: { maxWaitMs: 5000 } });
    await expect(resolverFor({ state: 'live', model }).resolve('m', 'chat')).resolves.toEqual({ model });
  });

  it('refuses a declared model without workers at once: 503 model_unavailable', async () => {
    const error = await refusalOf(resolverFor({ state: 'unavailable', model: entry() }).resolve('m', 'chat'));
    expect([error.status, error.code]).toEqual([503, 'model_unavailable']);
  });

  it('queues for a scale-to-zero model without workers, bounded by its maxWaitMs', async () => {
    const model = entry({ scaleToZero: { maxWaitMs: 45_000 } });
    await expect(resolverFor({ state: 'unavailable', model }).resolve('m', 'chat')).resolves.toEqual({
      model,
      startWithinMs: 45_000,
    });
  });

  it('still refuses the wrong kind and unknown ids before any queueing', async () => {
    const model = entry({ scaleToZero: { maxWaitMs: 45_000 } });
    const wrong = await refusalOf(resolverFor({ state: 'unavailable', model }).resolve('m', 'image'));
    expect([wrong.status, wrong.code]).toEqual([400, 'model_type_mismatch']);
    const unknown = await refusalOf(resolverFor({ state: 'unknown' }).resolve('nope', 'chat'));
    expect([unknown.status, unknown.code]).toEqual([404, 'model_not_found']);
  });

  it('resolves an alias to the model it names, for a key scoped to the model by either name', async () => {
    const model = entry({ liveWorkers: 1, aliases: ['claude-sonnet-4-5'] });
    const resolver = resolverFor({ state: 'live', model });
    const scoped = (models: string[]) => ({ models: new Set(models) }) as unknown as Principal;
    await expect(resolver.resolve('claude-sonnet-4-5', 'chat', scoped(['m']))).resolves.toEqual({ model });
    await expect(
      resolver.resolve('claude-sonnet-4-5', 'chat', scoped(['claude-sonnet-4-5'])),
    ).resolves.toEqual({
      model,
    });
    const refused = await refusalOf(resolver.resolve('claude-sonnet-4-5', 'chat', scoped(['other'])));
    expect([refused.status, refused.code]).toEqual([404, 'model_not_found']);
  });
});
