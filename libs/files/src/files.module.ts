import { Module } from '@nestjs/common';
import { FileExpirySweeper } from './catalog/file-expiry.sweeper';
import { RedisFileCatalog } from './catalog/redis-file.catalog';
import { FileCatalog } from './file-catalog';
import { FilesController } from './files.controller';
import { OBJECT_STORE_PROVIDER } from './objects/object-store.provider';
import { FileUploads } from './upload/file-upload.service';

/**
 * OpenAI's Files API (`/v1/files`) over the file catalog: metadata in Redis, content in the configured
 * object store (FILES_STORE), expired files swept. Exports the `FileCatalog` port, through which batches
 * read their input and write their output. The multipart body parser is installed by the assembly
 * (`acceptMultipartUploads`), before the routes exist.
 */
@Module({
  controllers: [FilesController],
  providers: [
    OBJECT_STORE_PROVIDER,
    RedisFileCatalog,
    { provide: FileCatalog, useExisting: RedisFileCatalog },
    FileUploads,
    FileExpirySweeper,
  ],
  exports: [FileCatalog],
})
export class FilesModule {}
