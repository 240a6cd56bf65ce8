import { useEffect, useState } from 'preact/hooks';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { ModelSelect } from '../components/model-select';
import { describeError, requestJson } from '../lib/api.client';
import { useModels } from '../lib/models.hook';
import { similarityMatrix } from '../lib/similarity';

interface Props {
  apiKey: string;
}

interface EmbeddingsAnswer {
  data: { index: number; embedding: number[] }[];
  usage: { prompt_tokens: number };
}

interface Result {
  texts: string[];
  dimensions: number;
  tokens: number;
  matrix: number[][];
}

/** The texts of the box: one per line, blank lines left out. */
const textsOf = (value: string) =>
  value
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** Paste texts, embed them in one request, and see how close each pair is. */
export function EmbeddingsView({ apiKey }: Props) {
  const models = useModels(apiKey, 'embedding');
  const [model, setModel] = useState('');
  const [text, setText] = useState('');
  const [dimensions, setDimensions] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<Result | null>(null);

  useEffect(() => {
    if (!models.models.includes(model)) setModel(models.models[0] ?? '');
  }, [models.models]);

  const embed = async () => {
    const texts = textsOf(text);
    if (texts.length === 0 || busy) return;
    setBusy(true);
    setError(null);
    try {
      const answer = await requestJson<EmbeddingsAnswer>('/v1/embeddings', {
        token: apiKey,
        method: 'POST',
        body: {
          model,
          input: texts,
          encoding_format: 'float',
          ...(Number(dimensions) > 0 && { dimensions: Number(dimensions) }),
        },
      });
      const vectors = [...answer.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
      setResult({
        texts,
        dimensions: vectors[0]?.length ?? 0,
        tokens: answer.usage.prompt_tokens,
        matrix: similarityMatrix(vectors),
      });
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };

  if (!apiKey) return <NeedsCredential what="API key" />;

  return (
    <section class="view" aria-labelledby="embeddings-title">
      <h1 id="embeddings-title">Embeddings</h1>
      <ErrorNotice error={models.error} />
      <form
        class="panel"
        onSubmit={(e) => {
          e.preventDefault();
          void embed();
        }}
      >
        <div class="field">
          <label for="embedding-texts">Texts, one per line</label>
          <textarea
            id="embedding-texts"
            rows={5}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </div>
        <div class="field-row">
          <ModelSelect id="embedding-model" state={models} value={model} onChange={setModel} />
          <div class="field">
            <label for="embedding-dimensions">Dimensions (optional)</label>
            <input
              id="embedding-dimensions"
              type="number"
              min={1}
              value={dimensions}
              onInput={(e) => setDimensions(e.currentTarget.value)}
            />
          </div>
        </div>
        <div class="button-row">
          <button type="submit" disabled={busy || !model || textsOf(text).length === 0}>
            {busy ? 'Embedding…' : 'Embed'}
          </button>
        </div>
      </form>
      <ErrorNotice error={error} />
      {result && (
        <div class="panel">
          <p>
            {result.texts.length} vectors of {result.dimensions} dimensions · {result.tokens} input tokens
          </p>
          <div class="table-wrap">
            <table aria-label="Cosine similarity of each pair of texts">
              <thead>
                <tr>
                  <th scope="col">similarity</th>
                  {result.texts.map((_, j) => (
                    <th key={j} scope="col">
                      {j + 1}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {result.matrix.map((row, i) => (
                  <tr key={i}>
                    <th scope="row" title={result.texts[i]}>
                      {i + 1}.{' '}
                      {result.texts[i]!.length > 40 ? `${result.texts[i]!.slice(0, 40)}…` : result.texts[i]}
                    </th>
                    {row.map((value, j) => (
                      <td key={j}>{value.toFixed(3)}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </section>
  );
}
