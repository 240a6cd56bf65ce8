import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCatalog, parseCatalog } from './catalog.loader';
import { ConfigError } from './load-config';

const PATH = 'deploy/test-catalog.json';

const chat = {
  id: 'sim-chat',
  type: 'chat',
  owned_by: 'model-gateway',
  backend: { kind: 'simulator', mode: 'echo' },
};
const image = {
  id: 'sim-image',
  type: 'image',
  owned_by: 'acme',
  created: 1700000000,
  backend: { kind: 'simulator' },
};

function catalog(...models: unknown[]): string {
  return JSON.stringify({ models });
}

function problemsOf(text: string): ConfigError {
  try {
    parseCatalog(text, PATH);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected ${text} to be refused`);
}

describe('parseCatalog', () => {
  it('parses a valid catalog', () => {
    const before = Math.floor(Date.now() / 1000);
    const result = parseCatalog(catalog(chat, image), PATH);
    const after = Math.floor(Date.now() / 1000);
    expect(result.path).toBe(PATH);
    expect(result.models).toHaveLength(2);
    const [c, i] = result.models;
    expect(c).toEqual({
      id: 'sim-chat',
      kind: 'chat',
      type: 'chat/compilations',
      ownedBy: 'model-gateway',
      created: expect.any(Number),
      backend: { kind: 'simulator', mode: 'echo' },
    });
    expect(c!.created).toBeGreaterThanOrEqual(before);
    expect(c!.created).toBeLessThanOrEqual(after);
    expect(i).toEqual({
      id: 'sim-image',
      kind: 'image',
      type: 'images/generations',
      ownedBy: 'acme',
      created: 1700000000,
      backend: { kind: 'simulator' },
    });
  });

  it("maps type 'chat' to the wire ModelType 'chat/compilations'", () => {
    expect(parseCatalog(catalog(chat), PATH).models[0]!.type).toBe('chat/compilations');
  });

  it('accepts ids with the allowed punctuation', () => {
    const ids = ['llama3:8b', 'org/model@v1.2', 'a+b_c-d'];
    const models = ids.map((id) => ({ ...chat, id }));
    expect(parseCatalog(catalog(...models), PATH).models.map((m) => m.id)).toEqual(ids);
  });

  it('refuses a duplicate id, naming it', () => {
    const error = problemsOf(catalog(chat, { ...image, id: 'sim-chat' }));
    expect(error.problems).toEqual([`catalog ${PATH}: model "sim-chat" is declared twice`]);
  });

  it('refuses a bad type, naming the model and the field', () => {
    const error = problemsOf(catalog(chat, { ...image, id: 'video-1', type: 'video' }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(PATH);
    expect(error.problems[0]).toContain('models[1]');
    expect(error.problems[0]).toContain('video-1');
    expect(error.problems[0]).toContain('type');
    expect(error.problems[0]).toContain("'chat' or 'image'");
  });

  it('refuses a backend without kind, naming the model', () => {
    const error = problemsOf(catalog({ ...chat, id: 'no-kind', backend: { mode: 'echo' } }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain('no-kind');
    expect(error.problems[0]).toContain('backend.kind');
  });

  it('refuses an empty backend.kind', () => {
    expect(problemsOf(catalog({ ...chat, backend: { kind: '' } })).message).toContain('backend.kind');
  });

  it('refuses a missing backend, naming the model', () => {
    const { backend: _omit, ...rest } = chat;
    const error = problemsOf(catalog(rest));
    expect(error.message).toContain('sim-chat');
    expect(error.message).toContain('backend');
  });

  it.each([
    ['an id with a space', { ...chat, id: 'bad id' }, 'id'],
    ['an id starting with punctuation', { ...chat, id: '-x' }, 'id'],
    ['a missing owned_by', { id: 'm', type: 'chat', backend: { kind: 's' } }, 'owned_by'],
    ['a negative created', { ...chat, created: -1 }, 'created'],
    ['a fractional created', { ...chat, created: 1.5 }, 'created'],
    ['an unknown field', { ...chat, colour: 'red' }, 'colour'],
  ])('refuses %s, naming the field', (_label, model, field) => {
    const error = problemsOf(catalog(model));
    expect(error.message).toContain(`models[0]`);
    expect(error.message).toContain(field);
  });

  it('reports several problems at once', () => {
    const error = problemsOf(catalog({ ...chat, type: 'x' }, { ...image, owned_by: '' }));
    expect(error.problems.length).toBeGreaterThanOrEqual(2);
    expect(error.message).toContain('sim-chat');
    expect(error.message).toContain('sim-image');
  });

  it('refuses text that is not JSON', () => {
    const error = problemsOf('{ "models": [ ');
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(`catalog ${PATH}: not valid JSON`);
  });

  it.each(['[]', 'null', '"models"', '3'])('refuses a document that is not an object: %s', (text) => {
    expect(problemsOf(text).message).toContain('expected an object with a "models" array');
  });

  it.each([
    ['a missing models list', '{}'],
    ['an empty models list', '{"models":[]}'],
    ['an unknown top-level field', JSON.stringify({ models: [chat], extra: 1 })],
  ])('refuses %s', (_label, text) => {
    expect(problemsOf(text).message).toContain(PATH);
  });

  // The catalog is operator input: every malformed shape must end in a ConfigError, never a TypeError.
  // SOURCE BUG (reported): the first three cases currently throw a TypeError from catalog.loader.ts
  // (`dto.models?.forEach is not a function`, and `model.id` read on a null entry).
  it.each([
    ['models as a string', '{"models":"sim-chat"}'],
    ['models as an object', '{"models":{"id":"sim-chat"}}'],
    ['a null model entry', '{"models":[null]}'],
    ['a numeric model entry', '{"models":[1]}'],
  ])('refuses %s with a ConfigError', (_label, text) => {
    expect(() => parseCatalog(text, PATH)).toThrow(ConfigError);
  });
});

describe('parseCatalog scaleToZero', () => {
  it('leaves scaleToZero out when a model does not declare it', () => {
    expect(parseCatalog(catalog(chat), PATH).models[0]).not.toHaveProperty('scaleToZero');
  });

  it('reads maxWaitMs', () => {
    const model = { ...chat, scaleToZero: { maxWaitMs: 30_000 } };
    expect(parseCatalog(catalog(model), PATH).models[0]!.scaleToZero).toEqual({ maxWaitMs: 30_000 });
  });

  it('defaults maxWaitMs to two minutes', () => {
    const model = { ...image, scaleToZero: {} };
    expect(parseCatalog(catalog(model), PATH).models[0]!.scaleToZero).toEqual({ maxWaitMs: 120_000 });
  });

  it.each([
    ['true', true, 'scaleToZero must be an object'],
    ['a number', 5, 'scaleToZero must be an object'],
    ['a zero wait', { maxWaitMs: 0 }, 'maxWaitMs must be an integer between 1 and 3600000'],
    ['a fractional wait', { maxWaitMs: 1.5 }, 'maxWaitMs must be an integer'],
    ['an hour and a bit', { maxWaitMs: 3_600_001 }, 'maxWaitMs must be an integer between 1 and 3600000'],
    ['an unknown field', { maxWait: 5 }, 'maxWait'],
  ])('refuses %s, naming the model and the field', (_label, scaleToZero, message) => {
    const error = problemsOf(catalog({ ...chat, scaleToZero }));
    expect(error.message).toContain('sim-chat');
    expect(error.message).toContain('scaleToZero');
    expect(error.message).toContain(message);
  });
});

describe('maxQueueDepth', () => {
  it('is carried through when set, and absent otherwise', () => {
    const [bounded, open] = parseCatalog(catalog({ ...chat, maxQueueDepth: 25 }, image), PATH).models;
    expect(bounded!.maxQueueDepth).toBe(25);
    expect(open).not.toHaveProperty('maxQueueDepth');
  });

  it.each([0, -1, 2.5, '10', null])('refuses %p, naming the model and the field', (value) => {
    const message = problemsOf(catalog({ ...chat, maxQueueDepth: value })).message;
    expect(message).toContain('"sim-chat"');
    expect(message).toContain('maxQueueDepth');
  });
});

describe('contextTokens', () => {
  it('is carried through when set, and absent otherwise', () => {
    const [bounded, open] = parseCatalog(catalog({ ...chat, contextTokens: 8192 }, image), PATH).models;
    expect(bounded!.contextTokens).toBe(8192);
    expect(open).not.toHaveProperty('contextTokens');
  });

  it.each([0, -1, 2.5, '8192', null, 100_000_001])('refuses %p, naming the model and the field', (value) => {
    const message = problemsOf(catalog({ ...chat, contextTokens: value })).message;
    expect(message).toContain('"sim-chat"');
    expect(message).toContain('contextTokens must be an integer from 1 to 100000000');
  });
});

describe('fallbacks', () => {
  const small = { ...chat, id: 'small-chat' };
  const tiny = { ...chat, id: 'tiny-chat' };

  it('are carried through in order when set, and absent otherwise', () => {
    const models = parseCatalog(
      catalog({ ...chat, fallbacks: ['small-chat', 'tiny-chat'] }, small, tiny, image),
      PATH,
    ).models;
    expect(models[0]!.fallbacks).toEqual(['small-chat', 'tiny-chat']);
    expect(models[1]).not.toHaveProperty('fallbacks');
  });

  it('may name each other: only the requested model’s own list is tried, so no loop exists', () => {
    const models = parseCatalog(
      catalog({ ...chat, fallbacks: ['small-chat'] }, { ...small, fallbacks: ['sim-chat'] }),
      PATH,
    ).models;
    expect(models.map((m) => m.fallbacks)).toEqual([['small-chat'], ['sim-chat']]);
  });

  it('refuses a fallback that is not in the catalog, naming the model and the field', () => {
    expect(problemsOf(catalog({ ...chat, fallbacks: ['nowhere'] })).problems).toEqual([
      `catalog ${PATH}: models[0] (model "sim-chat"): fallbacks[0] names "nowhere", which is not a model of the catalog`,
    ]);
  });

  it('refuses a fallback of another type', () => {
    expect(problemsOf(catalog({ ...chat, fallbacks: ['sim-image'] }, image)).problems).toEqual([
      `catalog ${PATH}: models[0] (model "sim-chat"): fallbacks[0] names "sim-image", a image model: a chat model falls back to chat models only`,
    ]);
  });

  it('refuses the model itself and a repeated fallback', () => {
    expect(
      problemsOf(catalog({ ...chat, fallbacks: ['small-chat', 'sim-chat', 'small-chat'] }, small)).problems,
    ).toEqual([
      `catalog ${PATH}: models[0] (model "sim-chat"): fallbacks[2] names "small-chat" a second time`,
      `catalog ${PATH}: models[0] (model "sim-chat"): fallbacks[1] names the model itself`,
    ]);
  });

  it.each([['small-chat'], [null], [{}], [['']], [[3]], [Array.from({ length: 9 }, (_, i) => `m${i}`)]])(
    'refuses the shape %p, naming the model and the field',
    (value) => {
      const message = problemsOf(catalog({ ...chat, fallbacks: value }, small)).message;
      expect(message).toContain('(model "sim-chat"): fallbacks');
    },
  );
});

describe('streamResume', () => {
  it('is a model’s default for resuming its streams: on or off, absent when not declared', () => {
    const models = parseCatalog(
      catalog(
        { ...chat, streamResume: 'on' },
        { ...chat, id: 'off-chat', streamResume: 'off' },
        {
          ...chat,
          id: 'plain-chat',
        },
      ),
      PATH,
    ).models;
    expect(models.map((m) => m.streamResume)).toEqual(['on', 'off', undefined]);
    expect(models[2]).not.toHaveProperty('streamResume');
  });

  it.each([['yes'], [true], [null], [1]])('refuses %p, naming the model and the field', (value) => {
    const { problems } = problemsOf(catalog({ ...chat, streamResume: value }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('models[0] (model "sim-chat"): streamResume');
  });
});

describe('urlInputs', () => {
  it('is a model’s URL policy: public, any or none, absent (public) when not declared', () => {
    const models = parseCatalog(
      catalog(
        { ...chat, urlInputs: 'public' },
        { ...chat, id: 'any-chat', urlInputs: 'any' },
        { ...chat, id: 'none-chat', urlInputs: 'none' },
        { ...chat, id: 'plain-chat' },
      ),
      PATH,
    ).models;
    expect(models.map((m) => m.urlInputs)).toEqual(['public', 'any', 'none', undefined]);
    expect(models[3]).not.toHaveProperty('urlInputs');
  });

  it.each([['private'], ['Public'], [true], [null], [1]])(
    'refuses %p, naming the model, the field and the values it takes',
    (value) => {
      const { problems } = problemsOf(catalog({ ...chat, urlInputs: value }));
      expect(problems).toEqual([
        `catalog ${PATH}: models[0] (model "sim-chat"): urlInputs must be 'public' or 'any' or 'none'`,
      ]);
    },
  );
});

describe('loadCatalog', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'catalog-spec-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads and parses a file', async () => {
    const file = join(dir, 'catalog.json');
    writeFileSync(file, catalog(chat));
    const result = await loadCatalog(file);
    expect(result.models.map((m) => m.id)).toEqual(['sim-chat']);
  });

  it('names CATALOG_PATH when the file cannot be read', async () => {
    const missing = join(dir, 'missing.json');
    await expect(loadCatalog(missing)).rejects.toBeInstanceOf(ConfigError);
    await expect(loadCatalog(missing)).rejects.toThrow(
      /CATALOG_PATH: cannot read .*missing\.json \(ENOENT\)/,
    );
  });
});

describe('aliases', () => {
  const small = { ...chat, id: 'small-chat' };

  it('are carried through when set, and absent otherwise', () => {
    const models = parseCatalog(
      catalog({ ...chat, aliases: ['claude-sonnet-4-5', 'gpt-4o'] }, small),
      PATH,
    ).models;
    expect(models[0]!.aliases).toEqual(['claude-sonnet-4-5', 'gpt-4o']);
    expect(models[1]).not.toHaveProperty('aliases');
  });

  it('refuses an alias that shadows a model or another model’s alias, or repeats, naming the model and the field', () => {
    expect(
      problemsOf(
        catalog(
          { ...chat, aliases: ['small-chat', 'gpt-4o', 'gpt-4o'] },
          { ...small, aliases: ['gpt-4o', 'sim-chat'] },
        ),
      ).problems,
    ).toEqual([
      `catalog ${PATH}: models[0] (model "sim-chat"): aliases[2] names "gpt-4o" a second time`,
      `catalog ${PATH}: models[0] (model "sim-chat"): aliases[0] names "small-chat", which is the id of a model of the catalog`,
      `catalog ${PATH}: models[1] (model "small-chat"): aliases[0] names "gpt-4o", already an alias of model "sim-chat"`,
      `catalog ${PATH}: models[1] (model "small-chat"): aliases[1] names "sim-chat", which is the id of a model of the catalog`,
    ]);
  });

  it.each([['gpt-4o'], [null], [['']], [[3]], [['has space']]])('refuses the shape %p', (value) => {
    expect(problemsOf(catalog({ ...chat, aliases: value })).message).toContain('(model "sim-chat"): aliases');
  });
});

describe('parseCatalog embedding models', () => {
  const embed = {
    id: 'sim-embed',
    type: 'embedding',
    owned_by: 'model-gateway',
    dimensions: 256,
    backend: { kind: 'simulator' },
  };

  it("maps type 'embedding' to 'embeddings' with its dimensions and the batching defaults", () => {
    const [model] = parseCatalog(catalog(embed), PATH).models;
    expect(model).toMatchObject({ kind: 'embedding', type: 'embeddings' });
    expect(model!.embedding).toEqual({ dimensions: 256, maxBatchInputs: 64, maxBatchDelayMs: 5 });
    const tuned = parseCatalog(catalog({ ...embed, maxBatchInputs: 1, maxBatchDelayMs: 2000 }), PATH);
    expect(tuned.models[0]!.embedding).toEqual({ dimensions: 256, maxBatchInputs: 1, maxBatchDelayMs: 2000 });
  });

  it('refuses an embedding model without dimensions and batching settings out of bounds, naming each', () => {
    const { dimensions: _, ...without } = embed;
    const error = problemsOf(catalog({ ...without, maxBatchInputs: 4096, maxBatchDelayMs: 60_000 }));
    expect(error.problems).toHaveLength(3);
    expect(error.problems.join('\n')).toMatch(/sim-embed.*dimensions is required/);
    expect(error.problems.join('\n')).toMatch(/maxBatchInputs/);
    expect(error.problems.join('\n')).toMatch(/maxBatchDelayMs/);
  });

  it('refuses the embedding fields on a chat model', () => {
    const error = problemsOf(catalog({ ...chat, dimensions: 8, maxBatchInputs: 4 }));
    expect(error.problems).toEqual([
      expect.stringContaining('dimensions is a field of embedding models only'),
      expect.stringContaining('maxBatchInputs is a field of embedding models only'),
    ]);
  });
});

describe('pricing', () => {
  const priced = (pricing: unknown, currency: unknown = 'USD') =>
    JSON.stringify({ currency, models: [{ ...chat, pricing }, image] });

  it('reads prices in micro-units of the catalog currency; a model without pricing has none', () => {
    const result = parseCatalog(
      priced({
        inputPerMillion: 2.5,
        outputPerMillion: 10,
        perImage: { '1024x1024': 0.04 },
        batchFactor: 0.5,
      }),
      PATH,
    );
    expect(result.currency).toBe('USD');
    expect(result.models[0]!.pricing).toEqual({
      inputPerMillion: 2_500_000,
      cachedInputPerMillion: 2_500_000,
      outputPerMillion: 10_000_000,
      embeddingPerMillion: 0,
      perImage: { '1024x1024': 40_000 },
      batchFactorPpm: 500_000,
    });
    expect(result.models[1]!.pricing).toBeUndefined();
    expect(parseCatalog(catalog(chat), PATH).currency).toBeUndefined();
  });

  it('refuses a negative or non-numeric price, a bad size or factor, naming the model and the field', () => {
    const error = problemsOf(
      priced({
        inputPerMillion: -1,
        outputPerMillion: '10',
        cachedInputPerMillion: 0.0000001,
        perImage: { big: 1, '512x512': -2 },
        batchFactor: 1.5,
        perToken: 1,
      }),
    );
    const named = 'models[0] (model "sim-chat"): pricing.';
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`${named}inputPerMillion must not be negative`),
        expect.stringContaining(`${named}outputPerMillion must be a number`),
        expect.stringContaining(`${named}cachedInputPerMillion must have at most six decimals`),
        expect.stringContaining(`${named}perImage.big is not an image size`),
        expect.stringContaining(`${named}perImage.512x512 must not be negative`),
        expect.stringContaining(`${named}batchFactor must be at most 1`),
        expect.stringContaining('pricing.perToken is not a field of pricing'),
      ]),
    );
  });

  it('requires the currency once a model has pricing, and a currency code', () => {
    const unnamed = JSON.stringify({ models: [{ ...chat, pricing: { inputPerMillion: 1 } }] });
    expect(problemsOf(unnamed).problems).toEqual([
      expect.stringContaining('currency is required: models[0] (model "sim-chat") has pricing'),
    ]);
    expect(problemsOf(priced({ inputPerMillion: 1 }, 'dollars')).problems).toEqual([
      expect.stringContaining('currency must be a currency code of three capital letters'),
    ]);
  });
});
