import { ConfigError, parseCatalog, type Catalog } from '@mgw/config';
import { selectServedModels } from './served-models';
import { refusal } from '@mgw/testing';

const PATH = 'deploy/test-catalog.json';

function model(id: string, type: 'chat' | 'image') {
  return { id, type, owned_by: 'acme', created: 1_700_000_000, backend: { kind: 'simulator' } };
}

function catalogOf(...models: ReturnType<typeof model>[]): Catalog {
  return parseCatalog(JSON.stringify({ models }), PATH);
}

const catalog = catalogOf(
  model('chat-a', 'chat'),
  model('image-a', 'image'),
  model('chat-b', 'chat'),
  model('image-b', 'image'),
  model('chat-c', 'chat'),
);

const ids = (models: { id: string }[]) => models.map((m) => m.id);

describe('selectServedModels', () => {
  describe('without WORKER_MODELS', () => {
    it('serves every chat model of the catalog, in catalog order', () => {
      const served = selectServedModels(catalog, 'chat', []);

      expect(ids(served)).toEqual(['chat-a', 'chat-b', 'chat-c']);
      expect(served.every((m) => m.kind === 'chat' && m.type === 'chat/compilations')).toBe(true);
    });

    it('serves every image model of the catalog', () => {
      const served = selectServedModels(catalog, 'image', []);

      expect(ids(served)).toEqual(['image-a', 'image-b']);
      expect(served.every((m) => m.type === 'images/generations')).toBe(true);
    });

    it('returns the catalog entries themselves, with their backend settings', () => {
      const [first] = selectServedModels(catalog, 'chat', []);

      expect(first).toBe(catalog.models[0]);
      expect(first).toEqual({
        id: 'chat-a',
        kind: 'chat',
        type: 'chat/compilations',
        ownedBy: 'acme',
        created: 1_700_000_000,
        backend: { kind: 'simulator' },
      });
    });

    it.each(['chat', 'image'] as const)(
      'refuses with a ConfigError naming the catalog when it declares no %s model',
      (kind) => {
        const other = kind === 'chat' ? 'image' : 'chat';
        const onlyOther = catalogOf(model('other-1', other), model('other-2', other));

        const error = refusal(() => selectServedModels(onlyOther, kind, []), ConfigError);
        expect(error.problems).toHaveLength(1);
        expect(error.problems[0]).toContain(PATH);
        expect(error.problems[0]).toContain(kind);
      },
    );
  });

  describe('with WORKER_MODELS', () => {
    it('serves exactly the named models, in the order named', () => {
      expect(ids(selectServedModels(catalog, 'chat', ['chat-c', 'chat-a']))).toEqual(['chat-c', 'chat-a']);
      expect(ids(selectServedModels(catalog, 'image', ['image-b']))).toEqual(['image-b']);
    });

    it('refuses an id the catalog does not declare, naming WORKER_MODELS, the id and the catalog', () => {
      const error = refusal(() => selectServedModels(catalog, 'chat', ['chat-a', 'gpt-4']), ConfigError);

      expect(error.problems).toHaveLength(1);
      expect(error.problems[0]).toContain('WORKER_MODELS');
      expect(error.problems[0]).toContain('"gpt-4"');
      expect(error.problems[0]).toContain(PATH);
      expect(error.message).toContain('gpt-4');
    });

    it('matches ids exactly (case-sensitive)', () => {
      const error = refusal(() => selectServedModels(catalog, 'chat', ['CHAT-A']), ConfigError);

      expect(error.problems[0]).toContain('"CHAT-A"');
    });

    it('refuses a model of the other kind, naming WORKER_MODELS, the id and both kinds', () => {
      const error = refusal(() => selectServedModels(catalog, 'chat', ['image-a']), ConfigError);

      expect(error.problems).toHaveLength(1);
      expect(error.problems[0]).toContain('WORKER_MODELS');
      expect(error.problems[0]).toContain('"image-a"');
      expect(error.problems[0]).toContain('image model');
      expect(error.problems[0]).toContain('chat model');
    });

    it('refuses a chat model for an image worker', () => {
      const error = refusal(() => selectServedModels(catalog, 'image', ['image-a', 'chat-b']), ConfigError);

      expect(error.problems).toHaveLength(1);
      expect(error.problems[0]).toContain('"chat-b"');
    });

    it('reports every bad id at once', () => {
      const error = refusal(
        () => selectServedModels(catalog, 'chat', ['missing-1', 'chat-a', 'image-b', 'missing-2']),
        ConfigError,
      );

      expect(error.problems).toHaveLength(3);
      expect(error.problems[0]).toContain('"missing-1"');
      expect(error.problems[1]).toContain('"image-b"');
      expect(error.problems[2]).toContain('"missing-2"');
    });

    it('refuses when the catalog has no model of the kind at all', () => {
      const imagesOnly = catalogOf(model('image-a', 'image'));

      const error = refusal(() => selectServedModels(imagesOnly, 'chat', ['image-a']), ConfigError);
      expect(error.problems[0]).toContain('WORKER_MODELS');
    });

    // Known defect (see report): WORKER_MODELS="chat-a,chat-a" yields chat-a twice, so the worker starts two
    // backends and two queue consumers for one model and heartbeats it twice. Either refusing the duplicate or
    // serving it once is acceptable; serving it twice is not.
    it('does not serve a model twice when WORKER_MODELS names it twice', () => {
      let served: string[];
      try {
        served = ids(selectServedModels(catalog, 'chat', ['chat-a', 'chat-b', 'chat-a']));
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return;
      }
      expect(served).toEqual(['chat-a', 'chat-b']);
    });
  });
});
