import { Module } from '@nestjs/common';
import { ReplyClients, StoredReadCounter } from '@mgw/http';
import { AdmissionService } from '@mgw/session';
import { ResponsesController } from './responses.controller';
import { ResponsesService } from './responses.service';
import { ResponsesStreamResumer } from './responses-stream.resumer';
import { ResponseStore } from './stored/response.store';
import { StoredResponses } from './stored/stored-responses.service';

/**
 * OpenAI's Responses API (`/v1/responses`) as a front-end over the request core (the global
 * `SessionModule`): its own validation, translation, renderers and stored responses, nothing else.
 */
@Module({
  controllers: [ResponsesController],
  providers: [
    ResponsesService,
    ResponsesStreamResumer,
    ResponseStore,
    StoredResponses,
    ReplyClients,
    // The stored routes' reads count against the key's rpm, as the request core's admission counts them.
    { provide: StoredReadCounter, useExisting: AdmissionService },
  ],
  // A batch's Responses lines are served by the same service as a live request.
  exports: [ResponsesService],
})
export class ResponsesApiModule {}
