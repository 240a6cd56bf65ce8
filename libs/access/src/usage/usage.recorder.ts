import type { Redis } from 'ioredis';
import type { ModelKind } from '@mgw/contracts';
import { accessNames, type AccessNames } from '../access.names';
import { RECORD_USAGE_SCRIPT } from '../limits/limit.scripts';
import { dayOf } from './usage.days';

export interface UsageSubject {
  requestId: string;
  model: string;
  /** Absent on jobs from a gateway that predates keys: counted for the service rate only. */
  keyId?: string;
}

export interface UsageAmounts {
  promptTokens: number;
  completionTokens: number;
  images: number;
}

/** Usage is kept this long per day and key. */
const USAGE_RETENTION_MS = 400 * 24 * 3600 * 1000;

/**
 * The worker's side of accounting: what a job generated, counted once, atomically, when it ends — whether
 * or not its client was still there to receive it.
 */
export class UsageRecorder {
  private readonly names: AccessNames;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly kind: ModelKind,
  ) {
    this.names = accessNames(namespace);
  }

  /** False when this request's usage had already been recorded. */
  async record(subject: UsageSubject, amounts: UsageAmounts, now = 0): Promise<boolean> {
    const keyId = subject.keyId ?? '';
    const day = dayOf(now || Date.now());
    const recorded = await RECORD_USAGE_SCRIPT.run(
      this.redis,
      [
        this.names.usageRecorded(subject.requestId),
        this.names.usage(keyId || 'unattributed', day),
        this.names.usageKeyIds,
        this.names.reservation(subject.requestId),
        this.names.tpm(keyId || 'unattributed'),
        this.names.served(this.kind, subject.model),
      ],
      [
        keyId,
        subject.model,
        Math.max(0, Math.round(amounts.promptTokens)),
        Math.max(0, Math.round(amounts.completionTokens)),
        Math.max(0, Math.round(amounts.images)),
        now,
        USAGE_RETENTION_MS,
      ],
    );
    return recorded === 1;
  }
}
