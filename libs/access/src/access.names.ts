import { queueNameFor, type ModelKind } from '@mgw/contracts';

/**
 * Every Redis name of keys, limits and usage, in the deployment's namespace. Key ids and request ids are
 * restricted to [A-Za-z0-9_-], and model ids go through the queue-name encoding, so no name can collide.
 */
export function accessNames(namespace: string) {
  return {
    keyRecord: (id: string) => `${namespace}:keys:record:${id}`,
    keyByHash: (hash: string) => `${namespace}:keys:hash:${hash}`,
    keyIds: `${namespace}:keys:ids`,
    /** pub/sub: the hash of a key whose record changed; every gateway drops it from its cache. */
    keysChanged: `${namespace}:keys:changed`,
    rpm: (keyId: string) => `${namespace}:limits:${keyId}:rpm`,
    tpm: (keyId: string) => `${namespace}:limits:${keyId}:tpm`,
    concurrency: (keyId: string) => `${namespace}:limits:${keyId}:concurrency`,
    /** What a request reserved against its key's TPM window, until the worker reconciles it. */
    reservation: (requestId: string) => `${namespace}:limits:reservation:${requestId}`,
    /** Admissions between the depth check and the job landing in the queue. */
    admitting: (kind: ModelKind, model: string) =>
      `${namespace}:admission:${queueNameFor(kind, model)}:pending`,
    /** Jobs finished per second, for the model's measured service rate. */
    served: (kind: ModelKind, model: string) => `${namespace}:admission:${queueNameFor(kind, model)}:served`,
    usage: (keyId: string, day: string) => `${namespace}:usage:${keyId}:${day}`,
    usageKeyIds: `${namespace}:usage:keys`,
    /** Marks a request whose usage was recorded, so a re-run job cannot count twice. */
    usageRecorded: (requestId: string) => `${namespace}:usage:recorded:${requestId}`,
  };
}

export type AccessNames = ReturnType<typeof accessNames>;
