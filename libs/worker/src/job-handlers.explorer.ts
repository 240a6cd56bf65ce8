import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { Job } from 'bullmq';
import type { ModelKind } from '@mgw/contracts';
import type { JobOutcome } from './job-runner';
import { JOB_HANDLER_KIND } from './on-job.decorator';

/** A job handler found by discovery: runs one job of `model`. */
export type JobHandler = (job: Job<unknown>, model: string) => Promise<JobOutcome>;

/**
 * The job handlers of this process, found among its providers by their `@OnJob` metadata (as immich's job
 * repository does): one per model kind. `handlerFor` fails the start for a kind with none, and discovery
 * for a kind with two, so a worker never takes a job it has nothing to run with.
 */
@Injectable()
export class JobHandlers {
  private handlers: ReadonlyMap<ModelKind, JobHandler> | null = null;

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  handlerFor(kind: ModelKind): JobHandler {
    const handler = this.discover().get(kind);
    if (handler === undefined) throw new Error(`no @OnJob('${kind}') handler among the worker's providers`);
    return handler;
  }

  private discover(): ReadonlyMap<ModelKind, JobHandler> {
    if (this.handlers !== null) return this.handlers;
    const found = new Map<ModelKind, JobHandler>();
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, JobHandler>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const kind = this.reflector.get<ModelKind | undefined>(JOB_HANDLER_KIND, prototype[name]!);
        if (kind === undefined) continue;
        if (found.has(kind)) throw new Error(`two @OnJob('${kind}') handlers: one kind has one handler`);
        // Looked up on each call, on the instance: what runs is the provider's method as it is then.
        found.set(kind, (job, model) => (instance[name] as JobHandler).call(instance, job, model));
      }
    }
    this.handlers = found;
    return found;
  }
}
