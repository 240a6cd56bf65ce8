import { Logger, type Type } from '@nestjs/common';
import { ClientProxyFactory, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom, timeout } from 'rxjs';
import type { RedisSettings } from '@mgw/config';
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
import { RegistryTransportClient, type RegistryTransportClientOptions } from './registry.transport';

/** Typed calls to the registry microservice over the Redis transport. */
export class RegistryClient {
  private readonly proxy: ClientProxy;
  private readonly patterns: RegistryPatterns;
  private readonly logger = new Logger('Registry');
  /** The Redis the transport runs on, as logs may name it (no password). */
  private readonly redisDescription: string;

  constructor(redis: RedisSettings, namespace: string) {
    this.redisDescription = redis.description;
    this.patterns = registryPatterns(namespace);
    const options: RegistryTransportClientOptions = { redis, name: `${namespace}:registry-client` };
    // Nest types ClientRedis's status stream narrower than a custom client's; the class is a ClientProxy.
    const customClass = RegistryTransportClient as unknown as Type<ClientProxy>;
    this.proxy = ClientProxyFactory.create({ customClass, options });
  }

  /** Fails naming the Redis it could not reach (its password redacted), not only ioredis's bare reason. */
  async connect(): Promise<void> {
    try {
      await this.proxy.connect();
    } catch (error) {
      throw new Error(`registry transport on ${this.redisDescription}: ${(error as Error).message}`, {
        cause: error,
      });
    }
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
