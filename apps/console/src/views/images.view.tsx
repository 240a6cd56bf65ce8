import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { ModelSelect } from '../components/model-select';
import { RequestSnippets } from '../components/request-snippets';
import { describeError, requestJson } from '../lib/api.client';
import { useModels } from '../lib/models.hook';

const SIZES = ['256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'] as const;

interface Props {
  apiKey: string;
}

interface ImagesAnswer {
  data: { b64_json: string; revised_prompt?: string }[];
}

interface Generated {
  url: string;
  prompt: string;
}

/** A PNG as a blob: URL (the page's CSP allows blob: images), so the DOM holds no megabytes of base64. */
function blobUrlOf(b64: string): string {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return URL.createObjectURL(new Blob([bytes], { type: 'image/png' }));
}

export function ImagesView({ apiKey }: Props) {
  const models = useModels(apiKey, 'image');
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [size, setSize] = useState<string>('256x256');
  const [n, setN] = useState('1');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [images, setImages] = useState<Generated[]>([]);
  const urls = useRef<string[]>([]);

  useEffect(() => {
    if (!models.models.includes(model)) setModel(models.models[0] ?? '');
  }, [models.models]);
  useEffect(() => () => urls.current.forEach((url) => URL.revokeObjectURL(url)), []);

  const body = () => ({ model, prompt: prompt.trim() || 'a lighthouse at dusk', size, n: Number(n) || 1 });

  const generate = async () => {
    if (!prompt.trim() || busy) return;
    setBusy(true);
    setError(null);
    try {
      const answer = await requestJson<ImagesAnswer>('/v1/images/generations', {
        token: apiKey,
        method: 'POST',
        body: body(),
      });
      urls.current.forEach((url) => URL.revokeObjectURL(url));
      const next = answer.data.map((image) => ({
        url: blobUrlOf(image.b64_json),
        prompt: image.revised_prompt ?? prompt,
      }));
      urls.current = next.map((image) => image.url);
      setImages(next);
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };

  if (!apiKey) return <NeedsCredential what="API key" />;

  return (
    <section class="view" aria-labelledby="images-title">
      <h1 id="images-title">Images</h1>
      <ErrorNotice error={models.error} />
      <form
        class="panel"
        onSubmit={(e) => {
          e.preventDefault();
          void generate();
        }}
      >
        <div class="field">
          <label for="image-prompt">Prompt</label>
          <textarea
            id="image-prompt"
            rows={2}
            value={prompt}
            onInput={(e) => setPrompt(e.currentTarget.value)}
          />
        </div>
        <div class="field-row">
          <ModelSelect id="image-model" state={models} value={model} onChange={setModel} />
          <div class="field">
            <label for="image-size">Size</label>
            <select id="image-size" value={size} onChange={(e) => setSize(e.currentTarget.value)}>
              {SIZES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="image-n">Number of images</label>
            <input
              id="image-n"
              type="number"
              min={1}
              max={10}
              value={n}
              onInput={(e) => setN(e.currentTarget.value)}
            />
          </div>
        </div>
        <div class="button-row">
          <button type="submit" disabled={busy || !model || prompt.trim() === ''}>
            {busy ? 'Generating…' : 'Generate'}
          </button>
        </div>
      </form>
      <ErrorNotice error={error} />
      <RequestSnippets operation="images" body={body} />
      {images.length > 0 && (
        <ul class="image-grid" aria-label="Generated images">
          {images.map((image, i) => (
            <li key={image.url}>
              <figure>
                <img src={image.url} alt={`Generated image ${i + 1}: ${image.prompt}`} />
                <figcaption>
                  <a href={image.url} download={`image-${i + 1}.png`}>
                    Download image {i + 1}
                  </a>
                </figcaption>
              </figure>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
