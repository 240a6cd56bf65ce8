import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { KeyAuthenticator, KeyStore } from '@mgw/access';
import { PubSubDispatcher } from '@mgw/queue';

/** Keeps the authenticator's key cache honest: a changed key is forgotten at once, across instances. */
@Injectable()
export class KeyInvalidationListener implements OnModuleInit {
  constructor(
    @Inject(PubSubDispatcher) private readonly pubsub: PubSubDispatcher,
    @Inject(KeyStore) private readonly keys: KeyStore,
    @Inject(KeyAuthenticator) private readonly authenticator: KeyAuthenticator,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.pubsub.listen(this.keys.invalidationChannel, {
      message: (hash) => this.authenticator.invalidate(hash),
      // Invalidations sent while the connection was down are lost: forget everything cached.
      connected: () => this.authenticator.clear(),
    });
  }
}
