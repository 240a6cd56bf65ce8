import { useEffect, useState } from 'preact/hooks';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { describeError, requestJson } from '../lib/api.client';
import type { ModelStatusList } from '../lib/admin.types';

interface Props {
  adminToken: string;
  /** Read only while the view is shown. */
  active: boolean;
}

/** How often the view reads `/admin/models` while it is open and the tab is visible. */
const REFRESH_MS = 3000;

export function ModelsView({ adminToken, active }: Props) {
  const [list, setList] = useState<ModelStatusList | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!adminToken || !active) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    const read = async () => {
      if (document.visibilityState === 'visible') {
        try {
          setList(
            await requestJson<ModelStatusList>('/admin/models', {
              token: adminToken,
              signal: controller.signal,
            }),
          );
          setError(null);
        } catch (e) {
          if (controller.signal.aborted) return;
          setError(describeError(e));
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
  }, [adminToken, active]);

  if (!adminToken) return <NeedsCredential what="Admin token" />;

  return (
    <section class="view" aria-labelledby="models-title">
      <h1 id="models-title">Models</h1>
      <p class="sub">
        Live: workers from the registry's heartbeats, queues read from Redis, refreshed every{' '}
        {REFRESH_MS / 1000} s{list && ` (last read ${new Date(list.read_at).toLocaleTimeString()})`}.
      </p>
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <caption>Models, workers and queues</caption>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Type</th>
              <th scope="col" class="num">
                Workers
              </th>
              <th scope="col" class="num">
                Queue depth
              </th>
              <th scope="col" class="num">
                In flight
              </th>
              <th scope="col" class="num">
                Waiting keys
              </th>
              <th scope="col" class="num">
                Oldest waiting
              </th>
              <th scope="col" class="num">
                Finished / min
              </th>
              <th scope="col" class="num">
                Error rate
              </th>
            </tr>
          </thead>
          <tbody>
            {list?.data.map((m) => (
              <tr key={m.id}>
                <th scope="row">{m.id}</th>
                <td>{m.type}</td>
                <td class="num">
                  <span class={`badge ${m.workers > 0 ? 'active' : 'disabled'}`}>{m.workers}</span>
                  {m.workers > 0 && <span class="sub"> · {m.concurrency} slots</span>}
                </td>
                <td class="num">
                  {m.waiting}
                  {m.max_queue_depth !== null && <span class="sub"> / {m.max_queue_depth}</span>}
                </td>
                <td class="num">{m.active}</td>
                <td class="num">
                  {m.waiting_keys}
                  {m.top_waiting_keys.length > 0 && (
                    <span class="sub">
                      {' '}
                      · {m.top_waiting_keys.map((k) => `${k.key_id} (${k.waiting})`).join(', ')}
                    </span>
                  )}
                </td>
                <td class="num">
                  {m.oldest_waiting_age_s > 0 ? `${m.oldest_waiting_age_s.toFixed(1)} s` : '—'}
                </td>
                <td class="num">{m.finished_last_minute}</td>
                <td class="num">
                  {m.error_rate === null ? '—' : `${(m.error_rate * 100).toFixed(1)} %`}
                  {m.failed_last_minute > 0 && <span class="sub"> ({m.failed_last_minute} failed)</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
