/**
 * The Redis names of batches. One batch's hash, results and lease share its `{id}` hash tag (one slot for
 * its scripts); one key's index and active batches share the key's; `running` lists every batch not yet
 * ended, for gateways to find those without a live driver.
 */
export function batchNamesFor(namespace: string) {
  return {
    batch: (batchId: string) => `${namespace}:batch:{${batchId}}`,
    /** Line index → its result line, kept as lines finish, until the batch's files are written. */
    results: (batchId: string) => `${namespace}:batch:{${batchId}}:results`,
    /** The id of the gateway driving the batch, with a TTL its driver renews. */
    lease: (batchId: string) => `${namespace}:batch:{${batchId}}:lease`,
    /** The key's batches by creation time. */
    index: (keyId: string) => `${namespace}:batches:{${keyId}}:index`,
    /** The key's batches not yet ended → their lines (0 until validated): the key's limits. */
    active: (keyId: string) => `${namespace}:batches:{${keyId}}:active`,
    running: `${namespace}:batches:running`,
  };
}

export type BatchNames = ReturnType<typeof batchNamesFor>;
