import { Logger } from '@nestjs/common';
import { ClientProxyFactory, Transport, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom, timeout } from 'rxjs';
import {
  readModelList,
  readModelLookup,
  registryProtocolVersionOf,
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
  private readonly logger = new Logger('Registry');

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

  async listModels(timeoutMs: number): Promise<ModelEntry[]> {
    const answer = await firstValueFrom(
      this.proxy.send<unknown>(this.patterns.listModels, {}).pipe(timeout(timeoutMs)),
    );
    return this.read(readModelList, answer, 'model list');
  }

  async getModel(id: string, timeoutMs: number): Promise<ModelLookup> {
    const answer = await firstValueFrom(
      this.proxy.send<unknown>(this.patterns.getModel, { id }).pipe(timeout(timeoutMs)),
    );
    return this.read(readModelLookup, answer, `lookup of ${id}`);
  }

  /** The registry is another process: its answers are read by the registry protocol's rules. */
  private read<T>(reader: (answer: unknown) => T, answer: unknown, what: string): T {
    try {
      return reader(answer);
    } catch (error) {
      this.logger.warn(`refusing the registry's ${what}: ${(error as Error).message}`);
      throw error;
    }
  }

  async heartbeat(beat: WorkerHeartbeatDto): Promise<void> {
    // Written without `v` while it describes a version 1 heartbeat (see protocol-version.ts).
    const v = registryProtocolVersionOf(beat.models.map((model) => model.type));
    const message = v === 1 ? beat : { v, ...beat };
    await lastValueFrom(this.proxy.emit(this.patterns.heartbeat, message), { defaultValue: undefined });
  }

  async deregister(message: WorkerDeregistrationDto): Promise<void> {
    await lastValueFrom(this.proxy.emit(this.patterns.deregister, message), { defaultValue: undefined });
  }

  async close(): Promise<void> {
    await this.proxy.close();
  }
}
