/**
 * Every metric name we export, in one place: the apps register them, and the Grafana dashboard, the
 * Prometheus rules and the reference table of docs/operations/metrics.md are checked against this list in tests.
 */
export const GATEWAY_METRICS = {
  httpRequests: 'gateway_http_requests_total',
  httpRequestDuration: 'gateway_http_request_duration_seconds',
  timeToFirstToken: 'gateway_time_to_first_token_seconds',
  queueWait: 'gateway_queue_wait_seconds',
  activeStreams: 'gateway_active_streams',
  clientDisconnects: 'gateway_client_disconnects_total',
  streamResumes: 'gateway_stream_resumes_total',
  resumeGraceExpired: 'gateway_resume_grace_expired_total',
  rejectedRequests: 'gateway_rejected_requests_total',
  overhead: 'gateway_overhead_seconds',
  fallbacks: 'gateway_fallbacks_total',
  hostedToolsDropped: 'gateway_hosted_tools_dropped_total',
  schedulerRefusals: 'gateway_scheduler_refusals_total',
  batchLines: 'gateway_batch_lines_total',
  batchLinesWaiting: 'gateway_batch_lines_waiting',
  batchOldestAge: 'gateway_batch_oldest_age_seconds',
  batchDuration: 'gateway_batch_duration_seconds',
  budgetUsedRatio: 'gateway_budget_used_ratio',
  budgetSoftThreshold: 'gateway_budget_soft_threshold_requests_total',
} as const;

export const WORKER_METRICS = {
  jobs: 'worker_jobs_total',
  jobDuration: 'worker_job_duration_seconds',
  tokens: 'worker_tokens_total',
  images: 'worker_images_total',
  interTokenLatency: 'worker_inter_token_seconds',
  activeJobs: 'worker_active_jobs',
  upstreamInFlight: 'worker_upstream_in_flight',
  upstreamRequests: 'worker_upstream_requests_total',
  upstreamUp: 'worker_upstream_up',
  upstreamMaxConcurrency: 'worker_upstream_max_concurrency',
  upstreamTimeToFirstOutput: 'worker_upstream_time_to_first_output_seconds',
  upstreamDuration: 'worker_upstream_duration_seconds',
  upstreamEngineLoad: 'worker_upstream_engine_load',
  prefixRouting: 'worker_prefix_routing_total',
  embeddingBatchInputs: 'worker_embedding_batch_inputs',
  embeddingInputs: 'worker_embedding_inputs_total',
  embeddingQueueWait: 'worker_embedding_queue_wait_seconds',
  usageTokens: 'worker_usage_tokens_total',
  usageCost: 'worker_usage_cost_total',
} as const;

/**
 * The OpenTelemetry GenAI semantic conventions' metrics, under their Prometheus names (dots to underscores,
 * the unit as a suffix), exported by the workers beside their own.
 */
export const GEN_AI_METRICS = {
  timeToFirstToken: 'gen_ai_server_time_to_first_token_seconds',
  timePerOutputToken: 'gen_ai_server_time_per_output_token_seconds',
  tokenUsage: 'gen_ai_client_token_usage',
} as const;

export const QUEUE_METRICS = {
  jobs: 'queue_jobs',
  oldestWaitingAge: 'queue_oldest_waiting_age_seconds',
  registryWorkers: 'registry_workers',
} as const;

export const METRIC_NAMES: readonly string[] = [
  ...Object.values(GATEWAY_METRICS),
  ...Object.values(WORKER_METRICS),
  ...Object.values(GEN_AI_METRICS),
  ...Object.values(QUEUE_METRICS),
];
