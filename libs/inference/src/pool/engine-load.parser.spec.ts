import { parseEngineLoad } from './engine-load.parser';

describe('parseEngineLoad', () => {
  it("reads vLLM's gauges, summed over their label sets", () => {
    const text = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
      '# TYPE vllm:num_requests_running gauge',
      'vllm:num_requests_running{engine="0",model_name="llama"} 3.0',
      'vllm:num_requests_running{engine="1",model_name="llama"} 2.0',
      'vllm:num_requests_waiting{engine="0",model_name="llama"} 8.0',
      'vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.42',
      'vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="llama"} 17.0',
    ].join('\n');
    expect(parseEngineLoad(text, 'vllm')).toEqual({ running: 5, waiting: 8, kvCacheUsage: 0.42 });
  });

  it("reads older vLLM's KV-cache gauge, SGLang's and llama.cpp server's names", () => {
    expect(parseEngineLoad('vllm:num_requests_running 1\nvllm:gpu_cache_usage_perc 0.5\n', 'vllm')).toEqual({
      running: 1,
      waiting: 0,
      kvCacheUsage: 0.5,
    });
    expect(
      parseEngineLoad(
        'sglang:num_running_reqs{tp_rank="0"} 4\nsglang:num_queue_reqs{tp_rank="0"} 2\nsglang:token_usage 0.9',
        'sglang',
      ),
    ).toEqual({ running: 4, waiting: 2, kvCacheUsage: 0.9 });
    expect(
      parseEngineLoad('llamacpp:requests_processing 2\nllamacpp:requests_deferred 6\n', 'llamacpp'),
    ).toEqual({ running: 2, waiting: 6, kvCacheUsage: null });
  });

  it('refuses a page without the load gauges (a wrong format, or not a metrics page)', () => {
    expect(() => parseEngineLoad('llamacpp:requests_processing 2\n', 'vllm')).toThrow(
      'no vllm:num_requests_running or vllm:num_requests_waiting',
    );
    expect(() => parseEngineLoad('<html>not found</html>', 'sglang')).toThrow();
  });

  it('ignores samples that are not numbers', () => {
    expect(parseEngineLoad('vllm:num_requests_waiting NaN\nvllm:num_requests_running 2', 'vllm')).toEqual({
      running: 2,
      waiting: 0,
      kvCacheUsage: null,
    });
  });
});
