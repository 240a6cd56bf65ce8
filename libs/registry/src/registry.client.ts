import { ClientProxyFactory, Transport, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom, timeout } from 'rxjs';
import {
  registryPatterns,
  type ModelEntry,
  type ModelLookup,
  type RegistryPatterns,
  type WorkerDeregistrationDto,
  type WorkerHeartbeatDto,
} from '@mgw/contracts';
import { redisOptionsFromUrl } from '@mgw/queue';

/** Typed calls to the registry microservice over the Redis transport. */
export class RegistryClient {
  private readonly proxy: ClientProxy;
  private readonly patterns: RegistryPatterns;

  constructor(redisUrl: string, namespace: string) {
    this.patterns = registryPatterns(namespace);
    this.proxy = ClientProxyFactory.create({
      transport: Transport.REDIS,
      options: { ...redisOptionsFromUrl(redisUrl), retryAttempts: Number.MAX_SAFE_INTEGER, retryDelay: 500 },
    });
  }

  async connect(): Promise<void> {
    await this.proxy.connect();
  }

  listModels(timeoutMs: number): Promise<ModelEntry[]> {
    return firstValueFrom(
      this.proxy.send<ModelEntry[]>(this.patterns.listModels, {}).pipe(timeout(timeoutMs)),
    );
  }

  getModel(id: string, timeoutMs: number): Promise<ModelLookup> {
    return firstValueFrom(
      this.proxy.send<ModelLookup>(this.patterns.getModel, { id }).pipe(timeout(timeoutMs)),
    );
  }

  async heartbeat(beat: WorkerHeartbeatDto): Promise<void> {
    await lastValueFrom(this.proxy.emit(this.patterns.heartbeat, beat), { defaultValue: undefined });
  }

  async deregister(message: WorkerDeregistrationDto): Promise<void> {
    await lastValueFrom(this.proxy.emit(this.patterns.deregister, message), { defaultValue: undefined });
  }

  async close(): Promise<void> {
    await this.proxy.close();
  }
}
