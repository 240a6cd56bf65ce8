import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { describeError, errorOfResponse, requestJson, send } from '../lib/api.client';
import {
  batchCancellable,
  batchEnded,
  progressOf,
  resultFileName,
  resultFilesOf,
  type BatchEndpoint,
  type BatchObject,
} from '../lib/batch.progress';

interface Props {
  apiKey: string;
  /** Read only while the view is shown. */
  active: boolean;
}

const ENDPOINTS: readonly BatchEndpoint[] = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'];

/** How often the view reads the key's batches while it is open and the tab is visible. */
const REFRESH_MS = 2000;
/** The most recent batches shown (OpenAI's list is newest first). */
const LIST_LIMIT = 20;

interface BatchList {
  data: BatchObject[];
}

/** A batch's output or error file, fetched with the key (a plain link could not send it) and saved. */
async function saveResultFile(apiKey: string, fileId: string, name: string): Promise<void> {
  const response = await send(`/v1/files/${encodeURIComponent(fileId)}/content`, { token: apiKey });
  if (!response.ok) throw await errorOfResponse(response);
  const url = URL.createObjectURL(await response.blob());
  try {
    const link = document.createElement('a');
    link.href = url;
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
  } finally {
    // The click has handed the blob to the download; the URL is not needed after this task.
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }
}

/** Upload a JSONL file of requests, create its batch, watch it run, download its results — as the API key. */
export function BatchesView({ apiKey, active }: Props) {
  const [file, setFile] = useState<File | null>(null);
  const [endpoint, setEndpoint] = useState<BatchEndpoint>('/v1/chat/completions');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [listError, setListError] = useState<string | null>(null);
  const [batches, setBatches] = useState<BatchObject[] | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [refreshes, setRefreshes] = useState(0);
  const fileInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (!apiKey || !active) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    const read = async () => {
      if (document.visibilityState === 'visible') {
        try {
          const list = await requestJson<BatchList>(`/v1/batches?limit=${LIST_LIMIT}`, {
            token: apiKey,
            signal: controller.signal,
          });
          setBatches(list.data);
          setListError(null);
        } catch (e) {
          if (controller.signal.aborted) return;
          setListError(describeError(e));
        }
      }
      // The next read is scheduled after this one ends: a slow answer never stacks requests up.
      timer = setTimeout(() => void read(), REFRESH_MS);
    };
    void read();
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [apiKey, active, refreshes]);

  const act = async (what: string, action: () => Promise<void>) => {
    setBusy(what);
    setError(null);
    try {
      await action();
      setRefreshes((n) => n + 1);
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(null);
    }
  };

  const create = () =>
    act('create', async () => {
      if (file === null) return;
      const form = new FormData();
      form.append('purpose', 'batch');
      form.append('file', file, file.name);
      const uploaded = await requestJson<{ id: string }>('/v1/files', {
        token: apiKey,
        method: 'POST',
        form,
      });
      await requestJson<BatchObject>('/v1/batches', {
        token: apiKey,
        method: 'POST',
        body: { input_file_id: uploaded.id, endpoint, completion_window: '24h' },
      });
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
    });

  const cancel = (id: string) =>
    act(`cancel ${id}`, async () => {
      setConfirming(null);
      await requestJson<BatchObject>(`/v1/batches/${encodeURIComponent(id)}/cancel`, {
        token: apiKey,
        method: 'POST',
      });
    });

  if (!apiKey) return <NeedsCredential what="API key" />;

  return (
    <section class="view" aria-labelledby="batches-title">
      <h1 id="batches-title">Batches</h1>
      <p class="sub">
        OpenAI's Batch API as this API key: a JSONL file of requests runs in the models' idle capacity (see
        docs/batches.md). The list is read every {REFRESH_MS / 1000} s.
      </p>
      <form
        class="panel"
        aria-label="New batch"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <div class="field-row">
          <div class="field">
            <label for="batch-file">Input file (JSONL)</label>
            <input
              id="batch-file"
              ref={fileInput}
              type="file"
              accept=".jsonl,application/jsonl,application/x-ndjson,text/plain"
              onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
            />
          </div>
          <div class="field">
            <label for="batch-endpoint">Endpoint</label>
            <select
              id="batch-endpoint"
              value={endpoint}
              onChange={(e) => setEndpoint(e.currentTarget.value as BatchEndpoint)}
            >
              {ENDPOINTS.map((e) => (
                <option key={e} value={e}>
                  {e}
                </option>
              ))}
            </select>
          </div>
        </div>
        <div class="button-row">
          <button type="submit" disabled={busy !== null || file === null}>
            {busy === 'create' ? 'Uploading…' : 'Create batch'}
          </button>
        </div>
      </form>
      <ErrorNotice error={error} />
      <ErrorNotice error={listError} />
      <div class="table-wrap">
        <table>
          <caption>Batches of this API key</caption>
          <thead>
            <tr>
              <th scope="col">Batch</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col" class="num">
                Failed
              </th>
              <th scope="col">Results</th>
            </tr>
          </thead>
          <tbody>
            {batches?.length === 0 && (
              <tr>
                <td colSpan={5} class="sub">
                  No batches yet.
                </td>
              </tr>
            )}
            {batches?.map((batch) => {
              const progress = progressOf(batch);
              return (
                <tr key={batch.id} aria-label={batch.id}>
                  <th scope="row">
                    <code>{batch.id}</code>
                    <div class="sub">
                      {batch.endpoint} · {new Date(batch.created_at * 1000).toLocaleString()}
                    </div>
                  </th>
                  <td>
                    <span class={`badge ${batch.status}`}>{batch.status}</span>
                    {batch.errors && batch.errors.data.length > 0 && (
                      <ul class="sub batch-errors" aria-label={`Errors of ${batch.id}`}>
                        {batch.errors.data.slice(0, 5).map((e, i) => (
                          <li key={i}>
                            {e.line !== null && `line ${e.line}: `}
                            {e.code}: {e.message}
                          </li>
                        ))}
                        {batch.errors.data.length > 5 && <li>… {batch.errors.data.length - 5} more</li>}
                      </ul>
                    )}
                  </td>
                  <td>
                    <progress
                      max={Math.max(progress.total, 1)}
                      value={progress.done}
                      aria-label={`Progress of ${batch.id}`}
                    />{' '}
                    <span class="num">{progress.label}</span>
                  </td>
                  <td class="num">{batch.request_counts.failed}</td>
                  <td class="actions">
                    {resultFilesOf(batch).map(({ kind, fileId }) => (
                      <button
                        key={kind}
                        type="button"
                        class="secondary"
                        disabled={busy !== null}
                        onClick={() =>
                          void act('download', () =>
                            saveResultFile(apiKey, fileId, resultFileName(batch.id, kind)),
                          )
                        }
                      >
                        Download {kind}
                      </button>
                    ))}
                    {batchCancellable(batch) &&
                      (confirming === batch.id ? (
                        <>
                          <button type="button" class="danger" onClick={() => void cancel(batch.id)}>
                            Confirm cancel
                          </button>
                          <button type="button" class="quiet" onClick={() => setConfirming(null)}>
                            Keep running
                          </button>
                        </>
                      ) : (
                        <button
                          type="button"
                          class="quiet danger-text"
                          disabled={busy !== null}
                          onClick={() => setConfirming(batch.id)}
                        >
                          Cancel batch
                        </button>
                      ))}
                    {batchEnded(batch) && !batch.output_file_id && !batch.error_file_id && (
                      <span class="sub">no results</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
