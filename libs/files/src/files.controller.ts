import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiErrors, ApiJson, mediaTypes } from '@mgw/api-docs';
import { Auth, requirePrincipal } from '@mgw/http';
import { RedisFileCatalog, type FileList } from './catalog/redis-file.catalog';
import type { FileObject } from './file-catalog';
import { FileErrors } from './file.errors';
import { FILE_LIST_LIMITS, parseFileListQuery } from './file-list.query';
import {
  FILE_DELETED_SCHEMA,
  FILE_EXAMPLE,
  FILE_LIST_EXAMPLE,
  FILE_LIST_SCHEMA,
  FILE_SCHEMA,
  FILE_UPLOAD_SCHEMA,
} from './files.openapi';
import { FileUploads } from './upload/file-upload.service';
import { MultipartUpload } from './upload/multipart-route';

export interface FileDeleted {
  id: string;
  object: 'file';
  deleted: true;
}

const fileId = ApiParam({ name: 'id', description: 'The file id (`file-…`).', example: FILE_EXAMPLE.id });

/**
 * Content-Disposition for a download: the name as RFC 5987 UTF-8, and a plain fallback (non-ASCII,
 * controls, quotes and backslashes replaced) for clients that read only `filename`.
 */
function attachment(filename: string): string {
  const plain = [...filename].map((c) => (c < ' ' || c > '~' || c === '"' || c === '\\' ? '_' : c)).join('');
  return `attachment; filename="${plain}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * OpenAI's Files API. Each file belongs to the key that uploaded it: another key's file answers 404 as an
 * unknown one does.
 */
@Controller('v1/files')
@Auth('required')
@ApiTags('Files')
@ApiErrors(400, 401)
export class FilesController {
  constructor(
    @Inject(RedisFileCatalog) private readonly catalog: RedisFileCatalog,
    @Inject(FileUploads) private readonly uploads: FileUploads,
  ) {}

  @Post()
  @HttpCode(200)
  @MultipartUpload()
  @ApiOperation({
    operationId: 'createFile',
    summary: 'Upload a file',
    description:
      'A multipart form with the `file` and its `purpose` (`batch`: a batch input file, JSONL). The file is streamed to storage as it arrives, within FILES_MAX_BYTES (413) and FILES_MAX_LINES.',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ required: true, schema: FILE_UPLOAD_SCHEMA })
  @ApiJson(200, FILE_SCHEMA, 'The stored file.', FILE_EXAMPLE)
  @ApiErrors(408, 413)
  create(@Req() request: FastifyRequest): Promise<FileObject> {
    return this.uploads.receive(request, requirePrincipal(request).keyId);
  }

  @Get()
  @ApiOperation({
    operationId: 'listFiles',
    summary: 'List files',
    description: "The key's files, newest first by default.",
  })
  @ApiQuery({ name: 'after', required: false, description: 'The last id of the previous page.' })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: {
      type: 'integer',
      minimum: FILE_LIST_LIMITS.min,
      maximum: FILE_LIST_LIMITS.max,
      default: FILE_LIST_LIMITS.default,
    },
  })
  @ApiQuery({ name: 'order', required: false, schema: { enum: ['asc', 'desc'], default: 'desc' } })
  @ApiQuery({ name: 'purpose', required: false, schema: { enum: ['batch', 'batch_output'] } })
  @ApiJson(200, FILE_LIST_SCHEMA, 'A page of files.', FILE_LIST_EXAMPLE)
  list(@Req() request: FastifyRequest, @Query() query: Record<string, unknown>): Promise<FileList> {
    return this.catalog.list(requirePrincipal(request).keyId, parseFileListQuery(query));
  }

  @Get(':id')
  @ApiOperation({ operationId: 'retrieveFile', summary: 'Retrieve a file' })
  @fileId
  @ApiJson(200, FILE_SCHEMA, 'The file.', FILE_EXAMPLE)
  @ApiErrors(404)
  async retrieve(@Req() request: FastifyRequest, @Param('id') id: string): Promise<FileObject> {
    const file = await this.catalog.get(requirePrincipal(request).keyId, id);
    if (file === undefined) throw FileErrors.notFound(id);
    return file;
  }

  @Get(':id/content')
  @ApiOperation({
    operationId: 'downloadFile',
    summary: "Retrieve a file's content",
    description: 'Streamed as stored.',
  })
  @fileId
  @ApiResponse({
    status: 200,
    description: 'The content.',
    content: mediaTypes({
      'application/octet-stream': {
        schema: { type: 'string', contentMediaType: 'application/octet-stream' },
      },
    }),
  })
  @ApiErrors(404)
  async content(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param('id') id: string,
  ): Promise<void> {
    const keyId = requirePrincipal(request).keyId;
    const file = await this.catalog.get(keyId, id);
    const content = file && (await this.catalog.read(keyId, id));
    if (file === undefined || content === undefined) throw FileErrors.notFound(id);
    await reply
      .status(200)
      .headers({
        'content-type': 'application/octet-stream',
        'content-length': String(file.bytes),
        'content-disposition': attachment(file.filename),
      })
      .send(content);
  }

  @Delete(':id')
  @ApiOperation({
    operationId: 'deleteFile',
    summary: 'Delete a file',
    description: 'Its record and its content.',
  })
  @fileId
  @ApiJson(200, FILE_DELETED_SCHEMA, 'The file is deleted.', {
    id: FILE_EXAMPLE.id,
    object: 'file',
    deleted: true,
  })
  @ApiErrors(404)
  async delete(@Req() request: FastifyRequest, @Param('id') id: string): Promise<FileDeleted> {
    if (!(await this.catalog.delete(requirePrincipal(request).keyId, id))) throw FileErrors.notFound(id);
    return { id, object: 'file', deleted: true };
  }
}
