import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  ConfigError,
  loadConfig,
  loadGatewayConfig,
  loadWorkerConfig,
  parseCatalog,
  RegistryConfig,
  type CatalogModel,
} from '@mgw/config';
import type { BackendSettings } from '@mgw/inference';
import { METRIC_NAMES } from '@mgw/observability';
import { checkBackendOf } from '@mgw/worker';
import {
  blockName,
  deadLinkReason,
  docFiles,
  linksOf,
  markedBlocks,
  parseDotenv,
  parseToml,
  readDoc,
  type FencedBlock,
} from '../../support/markdown-docs';

/**
 * The docs' static half (docs/development.md, "Docs that cannot rot"): every relative link and anchor of
 * README.md and docs/ resolves, every catalog example loads through the real catalog loader and backend
 * checks, every env example passes the real config validation, and the Codex configuration parses. The
 * commands and SDK snippets run against a stack in test/docs.e2e-spec.ts.
 */
describe('the docs', () => {
  it('link only to files and headings that exist', () => {
    const links = docFiles().flatMap((file) => linksOf(file));
    expect(links.length).toBeGreaterThan(50);
    const dead = links.flatMap((link) => {
      const reason = deadLinkReason(link);
      return reason === null ? [] : [`${link.file}:${link.line} ${link.target}: ${reason}`];
    });
    expect(dead).toEqual([]);
  });

  it('document every metric the apps export, and no other', () => {
    const docs = docFiles()
      .map((file) => readDoc(file))
      .join('\n');
    expect(METRIC_NAMES.filter((name) => !new RegExp(`\`${name}[\`{]`).test(docs))).toEqual([]);
    // A name in the first column of a table of docs/operations/metrics.md is one the apps export.
    const table = readDoc('docs/operations/metrics.md')
      .split('\n')
      .flatMap((line) => /^\| `([a-z_:]+)`/.exec(line)?.slice(1) ?? []);
    expect(table.length).toBeGreaterThan(10);
    expect(table.filter((name) => !METRIC_NAMES.includes(name))).toEqual([]);
  });

  describe('catalog examples (```json catalog)', () => {
    const blocks = markedBlocks('catalog', 'json');

    it('exist', () => expect(blocks.length).toBeGreaterThan(5));

    it.each(blocks.map((block) => [blockName(block), block] as const))(
      '%s loads through the catalog loader and its backend accepts its options',
      (_name, block) => {
        const models = loadExampleCatalog(block);
        expect(models.length).toBeGreaterThan(0);
      },
    );
  });

  describe('env examples (```dotenv env)', () => {
    const blocks = markedBlocks('env');

    it('exist', () => expect(blocks.length).toBeGreaterThan(0));

    it.each(blocks.map((block) => [blockName(block), block] as const))(
      '%s passes the gateway, worker and registry validation',
      (_name, block) => {
        const env = parseDotenv(block.code);
        expect(() => loadGatewayConfig(env)).not.toThrow();
        for (const kind of ['chat', 'image', 'embedding'] as const) {
          expect(() => loadWorkerConfig(env, kind)).not.toThrow();
        }
        expect(() => loadConfig(RegistryConfig, env)).not.toThrow();
      },
    );
  });

  describe('Codex configuration (```toml codex)', () => {
    const blocks = markedBlocks('codex', 'toml');

    it('exists', () => expect(blocks.length).toBeGreaterThan(0));

    it.each(blocks.map((block) => [blockName(block), block] as const))(
      '%s names a provider that speaks the Responses API to the gateway',
      (_name, block) => {
        const config = parseToml(block.code);
        const providers = config.model_providers as Record<string, Record<string, unknown>>;
        const provider = providers[config.model_provider as string];
        expect(typeof config.model).toBe('string');
        expect(provider).toMatchObject({
          wire_api: 'responses',
          base_url: expect.stringMatching(/^https?:\/\/[^/]+\/v1$/) as unknown,
          env_key: expect.any(String) as unknown,
        });
      },
    );
  });

  it('refuse what the old README showed: backend.model on the openai backend', () => {
    const block: FencedBlock = {
      file: 'docs/clients/claude-code.md',
      line: 0,
      lang: 'json',
      markers: ['catalog'],
      code: JSON.stringify({
        id: 'qwen-coder',
        type: 'chat',
        owned_by: 'platform',
        backend: { kind: 'openai', baseUrl: 'http://vllm:8000/v1', model: 'Qwen/Qwen2.5-Coder-32B-Instruct' },
      }),
    };
    expect(() => loadExampleCatalog(block)).toThrow(/backend\.model is not an option of the openai backend/);
  });
});

/**
 * A catalog example as a worker would load it: a whole catalog (`{"models": [...]}`) or one model entry
 * (wrapped into one), written next to the placeholder files its `modelPath`s name (the GGUF is the
 * reader's), with every variable an `apiKeyEnv` names set, and each model's backend options checked.
 */
function loadExampleCatalog(block: FencedBlock): CatalogModel[] {
  const parsed = JSON.parse(block.code) as { models?: unknown[] };
  const document = Array.isArray(parsed.models) ? parsed : { models: [parsed] };
  const dir = mkdtempSync(join(tmpdir(), 'docs-catalog-'));
  try {
    const environment = new Map<string, string>();
    for (const model of document.models as { backend?: { modelPath?: unknown; apiKeyEnv?: unknown } }[]) {
      if (typeof model.backend?.modelPath === 'string') {
        const path = resolve(dir, model.backend.modelPath);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, '');
      }
      if (typeof model.backend?.apiKeyEnv === 'string')
        environment.set(model.backend.apiKeyEnv, 'sk-upstream');
    }
    const catalogPath = join(dir, 'catalog.json');
    const text = JSON.stringify(document);
    writeFileSync(catalogPath, text);
    const catalog = parseCatalog(text, `${block.file}:${block.line}`);
    const settings: BackendSettings = {
      simChatTtftMs: 0,
      simChatTokensPerS: 0,
      simImageLatencyMs: 0,
      concurrency: 8,
      environment,
      catalogDir: dir,
    };
    for (const model of catalog.models) checkBackendOf(model.kind, model, settings);
    return catalog.models;
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new Error(`${block.file}:${block.line}: ${error.message}`, { cause: error });
    }
    throw error;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
