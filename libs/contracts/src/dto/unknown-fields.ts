/**
 * What a read does with a field it does not know. The HTTP edge refuses it, as OpenAI does (a typo in a
 * parameter name must not pass silently). A process reading what another process of the deployment wrote
 * (a worker reading a job, the registry reading a heartbeat) drops it: during a rolling upgrade the writer
 * may be newer and add optional fields this reader cannot know (see `protocol-version.ts`). A dropped field
 * is deleted from the reader's own parse, so nothing passes it on as if it were understood.
 */
export type UnknownFields = 'refuse' | 'drop';

let current: UnknownFields = 'refuse';

/**
 * The mode of the class-validator run under way (`validateDto`), for the constraints that check plain
 * objects themselves (content parts, `tool_choice`, `prediction`): class-validator hands a constraint no
 * options, and its run is synchronous, so no other read can interleave with it.
 */
export function unknownFieldsNow(): UnknownFields {
  return current;
}

/** Runs `read` with `mode` as `unknownFieldsNow()`; synchronous only. */
export function withUnknownFields<T>(mode: UnknownFields, read: () => T): T {
  const previous = current;
  current = mode;
  try {
    return read();
  } finally {
    current = previous;
  }
}

/**
 * The first field of `record` (in `Object.keys` order) that is not one of `known`, to be refused; with
 * 'drop', every such field is deleted instead and the answer is undefined. `record` is parsed JSON, whose
 * fields are all its own: `for…in` visits them without allocating an array of keys.
 */
export function unknownFieldOf(
  record: Record<string, unknown>,
  known: readonly string[],
  mode: UnknownFields,
): string | undefined {
  for (const field in record) {
    if (known.includes(field)) continue;
    if (mode === 'refuse') return field;
    delete record[field];
  }
  return undefined;
}
