import type { MetricValue } from 'prom-client';
import { WorkerMetrics } from './worker.metrics';

type Value = MetricValue<string> & { metricName?: string };

describe('WorkerMetrics', () => {
  const served = [
    { id: 'sim-chat', kind: 'chat' as const },
    { id: 'sim-image', kind: 'image' as const },
  ];
  let metrics: WorkerMetrics;

  const valuesOf = async (name: string) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values as Value[];

  beforeEach(() => {
    metrics = new WorkerMetrics('chat-worker', served, { defaultMetrics: false });
  });

  it('exports every outcome of every served model at zero before any job', async () => {
    const jobs = await valuesOf('worker_jobs_total');
    expect(jobs).toHaveLength(8);
    expect(jobs.every((v) => v.value === 0)).toBe(true);
  });

  it('counts usage by model and team, never by key, with `none` for no team', async () => {
    metrics.usageRecorded('sim-chat', 'team_a', { promptTokens: 5, completionTokens: 7, costMicros: 1_500 });
    metrics.usageRecorded('sim-chat', undefined, { promptTokens: 1, completionTokens: 2, costMicros: 0 });
    const tokens = await valuesOf('worker_usage_tokens_total');
    const of = (team: string, kind: string) =>
      tokens.find((v) => v.labels.team === team && v.labels.kind === kind && v.labels.model === 'sim-chat')
        ?.value;
    expect([of('team_a', 'prompt'), of('team_a', 'completion'), of('none', 'prompt')]).toEqual([5, 7, 1]);
    const cost = await valuesOf('worker_usage_cost_total');
    expect(cost.find((v) => v.labels.team === 'team_a')!.value).toBeCloseTo(0.0015, 10);
    expect(Object.keys(cost[0]!.labels).sort()).toEqual(['model', 'team']);
  });

  it('counts a job once with its outcome, its duration and the active gauge', async () => {
    const finish = metrics.jobStarted('sim-chat');
    expect((await valuesOf('worker_active_jobs')).find((v) => v.labels.model === 'sim-chat')!.value).toBe(1);
    finish('cancelled');
    finish('completed'); // ignored
    expect((await valuesOf('worker_active_jobs')).find((v) => v.labels.model === 'sim-chat')!.value).toBe(0);
    const jobs = await valuesOf('worker_jobs_total');
    expect(jobs.find((v) => v.labels.model === 'sim-chat' && v.labels.outcome === 'cancelled')!.value).toBe(
      1,
    );
    expect(jobs.find((v) => v.labels.model === 'sim-chat' && v.labels.outcome === 'completed')!.value).toBe(
      0,
    );
    const duration = await valuesOf('worker_job_duration_seconds');
    expect(duration.find((v) => v.metricName === 'worker_job_duration_seconds_count')!.value).toBe(1);
  });

  it('reads tokens from the usage, images from image messages, and gaps between deltas', async () => {
    const chat = metrics.observerFor('sim-chat');
    chat.onSend({ kind: 'started' });
    chat.onSend({ kind: 'delta' });
    chat.onSend({ kind: 'delta' });
    chat.onSend({ kind: 'delta' });
    chat.onSend({ kind: 'chat-done', usage: { prompt_tokens: 7, completion_tokens: 3 } });
    // A count-only job's answer: no choices, nothing processed.
    metrics
      .observerFor('sim-chat')
      .onSend({ kind: 'chat-done', finishReasons: [], usage: { prompt_tokens: 40, completion_tokens: 0 } });
    metrics.observerFor('sim-image').onSend({ kind: 'image' });
    const tokens = await valuesOf('worker_tokens_total');
    expect(tokens.find((v) => v.labels.kind === 'prompt')!.value).toBe(7);
    expect(tokens.find((v) => v.labels.kind === 'completion')!.value).toBe(3);
    const gaps = await valuesOf('worker_inter_token_seconds');
    expect(gaps.find((v) => v.metricName === 'worker_inter_token_seconds_count')!.value).toBe(2);
    expect((await valuesOf('worker_images_total'))[0]).toEqual(
      expect.objectContaining({ value: 1, labels: { model: 'sim-image' } }),
    );
  });

  it('counts a model it does not serve under other', async () => {
    metrics.jobStarted('not-served')('failed');
    const jobs = await valuesOf('worker_jobs_total');
    expect(jobs.find((v) => v.labels.model === 'other' && v.labels.outcome === 'failed')!.value).toBe(1);
  });

  it('records the GenAI semconv metrics of a generation: first token, per output token, usage by type', async () => {
    const observer = metrics.observerFor('sim-chat');
    observer.onSend({ kind: 'started' });
    observer.onSend({ kind: 'delta' });
    observer.onSend({ kind: 'delta' });
    observer.onSend({
      kind: 'chat-done',
      usage: { prompt_tokens: 12, completion_tokens: 5 },
      finishReasons: ['stop'],
    });
    const labels = { gen_ai_operation_name: 'chat', gen_ai_request_model: 'sim-chat' };
    const count = (values: Value[], name: string, extra: Record<string, string> = {}) =>
      values.find(
        (v) =>
          v.metricName === name &&
          Object.entries({ ...labels, ...extra }).every(([k, x]) => v.labels[k] === x),
      )?.value;
    const ttft = await valuesOf('gen_ai_server_time_to_first_token_seconds');
    expect(count(ttft, 'gen_ai_server_time_to_first_token_seconds_count')).toBe(1);
    const tpot = await valuesOf('gen_ai_server_time_per_output_token_seconds');
    expect(count(tpot, 'gen_ai_server_time_per_output_token_seconds_count')).toBe(1);
    const usage = await valuesOf('gen_ai_client_token_usage');
    expect(count(usage, 'gen_ai_client_token_usage_sum', { gen_ai_token_type: 'input' })).toBe(12);
    expect(count(usage, 'gen_ai_client_token_usage_sum', { gen_ai_token_type: 'output' })).toBe(5);
  });
});
