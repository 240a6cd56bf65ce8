import { Controller, Inject, Logger, type Type } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import {
  ModelLookupRequestDto,
  readVersionedDto,
  registryAnswer,
  WorkerDeregistrationDto,
  WorkerHeartbeatDto,
  type ModelEntry,
  type ModelLookup,
  type RegistryAnswer,
  type RegistryPatterns,
} from '@mgw/contracts';
import { WorkerDirectory } from './worker.directory';

/**
 * The registry's message handlers. Patterns carry the deployment namespace, which is only known once
 * config is loaded, so the controller class is built for the namespace at module creation.
 */
export function createRegistryController(patterns: RegistryPatterns): Type<unknown> {
  @Controller()
  class RegistryController {
    private readonly logger = new Logger('Registry');

    constructor(@Inject(WorkerDirectory) private readonly directory: WorkerDirectory) {}

    @EventPattern(patterns.heartbeat)
    onHeartbeat(@Payload() payload: unknown): void {
      const beat = this.parse(WorkerHeartbeatDto, payload, 'heartbeat');
      if (!beat) return;
      if (this.directory.heartbeat(beat).isNew) {
        this.logger.log(`worker ${beat.instanceId} registered: ${beat.models.map((m) => m.id).join(', ')}`);
      }
    }

    @EventPattern(patterns.deregister)
    onDeregister(@Payload() payload: unknown): void {
      const message = this.parse(WorkerDeregistrationDto, payload, 'deregistration');
      if (message && this.directory.deregister(message.instanceId)) {
        this.logger.log(`worker ${message.instanceId} deregistered`);
      }
    }

    @MessagePattern(patterns.listModels)
    listModels(): RegistryAnswer<ModelEntry>[] {
      return this.directory.list().map(registryAnswer);
    }

    @MessagePattern(patterns.getModel)
    getModel(@Payload() payload: unknown): RegistryAnswer<ModelLookup> {
      const request = this.parse(ModelLookupRequestDto, payload, 'model lookup');
      return registryAnswer(request ? this.directory.lookup(request.id) : { state: 'unknown' });
    }

    /** A worker's or gateway's message, read by the registry protocol's rules (see protocol-version.ts). */
    private parse<T extends object>(cls: new () => T, payload: unknown, what: string): T | null {
      try {
        return readVersionedDto(cls, payload, 'registry');
      } catch (error) {
        this.logger.warn(`ignoring ${what}: ${error instanceof Error ? error.message : String(error)}`);
        return null;
      }
    }
  }
  return RegistryController;
}
