import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { KeyAuthenticator, KeyStore } from '@mgw/access';
import { readKeyInvalidation } from '@mgw/contracts';
import { PubSubDispatcher } from '@mgw/redis';

/** Keeps the authenticator's key cache honest: a changed key is forgotten at once, across instances. */
@Injectable()
export class KeyInvalidationListener implements OnModuleInit {
  private readonly logger = new Logger('Keys');

  constructor(
    @Inject(PubSubDispatcher) private readonly pubsub: PubSubDispatcher,
    @Inject(KeyStore) private readonly keys: KeyStore,
    @Inject(KeyAuthenticator) private readonly authenticator: KeyAuthenticator,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.pubsub.listen(this.keys.invalidationChannel, {
      message: (raw) => this.onInvalidation(raw),
      // Invalidations sent while the connection was down are lost: forget everything cached.
      connected: () => this.authenticator.clear(),
    });
  }

  /** An invalidation this gateway cannot read (a newer version) still says a key changed: forget them all. */
  private onInvalidation(raw: string): void {
    let keyHash: string;
    try {
      keyHash = readKeyInvalidation(raw);
    } catch (error) {
      this.logger.warn(`forgetting every cached key: ${(error as Error).message}`);
      this.authenticator.clear();
      return;
    }
    this.authenticator.invalidate(keyHash);
  }
}
