import type { Provider } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { DirectoryObjectStore } from './directory-object.store';
import { ObjectStore } from './object.store';
import { S3ObjectStore } from './s3-object.store';

/** The object store FILES_STORE names, built from its settings. */
export function objectStoreFor(config: GatewayConfig): ObjectStore {
  switch (config.filesStore) {
    case 'directory':
      return new DirectoryObjectStore(config.filesDir);
    case 's3':
      return new S3ObjectStore({
        bucket: config.filesS3Bucket,
        prefix: config.filesS3Prefix,
        client: {
          region: config.filesS3Region,
          endpoint: config.filesS3Endpoint,
          forcePathStyle: config.filesS3ForcePathStyle,
        },
      });
  }
}

export const OBJECT_STORE_PROVIDER: Provider = {
  provide: ObjectStore,
  useFactory: objectStoreFor,
  inject: [GatewayConfig],
};
