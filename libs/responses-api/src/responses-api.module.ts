import { Module } from '@nestjs/common';
import { ReplyClients } from '@mgw/http';
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
  providers: [ResponsesService, ResponsesStreamResumer, ResponseStore, StoredResponses, ReplyClients],
})
export class ResponsesApiModule {}
