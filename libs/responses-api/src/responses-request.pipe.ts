import { Injectable, type PipeTransform } from '@nestjs/common';
import { validateResponsesRequest } from './responses-request.schema';
import type { ResponsesRequest } from './responses.types';

/** Validates a `POST /v1/responses` body on the plain object (see `validateResponsesRequest`). */
@Injectable()
export class ResponsesRequestPipe implements PipeTransform<unknown, ResponsesRequest> {
  transform(value: unknown): ResponsesRequest {
    return validateResponsesRequest(value);
  }
}
