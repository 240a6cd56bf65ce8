/** Where the Files API keeps file contents (FILES_STORE). */
export const FILE_STORE_KINDS = ['directory', 's3'] as const;
export type FileStoreKind = (typeof FILE_STORE_KINDS)[number];

/** OpenAI's bounds on a batch input file; the gateway's limits may be set lower, never higher. */
export const OPENAI_FILE_LIMITS = {
  batchBytes: 200 * 1024 * 1024,
  batchLines: 50_000,
} as const;
