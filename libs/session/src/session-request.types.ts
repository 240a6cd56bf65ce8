import type { ImageOrder, Principal } from '@mgw/access';
import type {
  DoneMessage,
  GatewayError,
  ImageMessage,
  ModelEntry,
  ModelKind,
  TokenLogprob,
  ToolCallMessage,
} from '@mgw/contracts';
import type { ChatRequest, EmbeddingRequest, ImageRequest, ParamOrigins } from '@mgw/request';
import type { EventSink } from './client/session-client.port';

/** The request of a kind as the session takes it and queues it: the kind's neutral request. */
export type RequestOf<K extends ModelKind> = K extends 'chat'
  ? ChatRequest
  : K extends 'image'
    ? ImageRequest
    : EmbeddingRequest;

/** A protocol's request as the session takes it: the internal job request plus protocol-neutral options. */
export interface SessionRequest<K extends ModelKind> {
  kind: K;
  requestId: string;
  principal: Principal;
  /** The requested model id (resolved at admission), or undefined for the kind's default. */
  model: string | undefined;
  /** The neutral request of its kind (`ChatRequest`, `ImageRequest`, `EmbeddingRequest`). */
  request: RequestOf<K>;
  /** Tokens the request may use, for the key's token budget (0 when the kind uses none). */
  tokenEstimate: number;
  /** An image request's images (`n`, `size`): what it reserves against a budget. */
  images?: ImageOrder;
  /**
   * Checks of the request against a model it may be served by (what it supports). A chat request's prompt
   * is also checked against the model's context window by the session itself, for every front-end.
   */
  checkModel?: (model: ModelEntry) => void;
  /**
   * Where the request's parts came from in the client's body (default: they are its params as they are):
   * every refusal the session tells the client — its own checks, a model's, a worker's — names the client's
   * param through it.
   */
  origins?: ParamOrigins;
  /**
   * The client's own choice about resuming a stream (`x-stream-resume`): 'on', 'off', or undefined for the
   * model's catalog default (`streamResume`).
   */
  resume?: 'on' | 'off';
  /** The job runs to its end even if the client leaves (a stored completion). */
  outlivesClient?: boolean;
  /**
   * A chat job that only counts its prompt (`ChatJobData.countOnly`): the worker answers a `chat-done` with
   * the prompt's tokens and no choices. Give it a `tokenEstimate` of 0: a count uses no tokens of the key.
   */
  countOnly?: boolean;
  /**
   * A background request (a background response, streamed or not): its job runs to its end without its
   * client and without this gateway, which a drain or a crash lets go of instead of ending (its stream is
   * resumed on another replica).
   */
  background?: boolean;
}

/**
 * A stream resumed here, as its session knows it: who asked and how it runs on. Its job exists (with the
 * request in it), so nothing of the request is admitted or enqueued again.
 */
export type ResumedRequest = Pick<
  SessionRequest<'chat'>,
  'kind' | 'requestId' | 'principal' | 'background' | 'outlivesClient' | 'origins'
>;

/** What a renderer needs to know of the request it renders. */
export interface RenderContext {
  requestId: string;
  /** The model whose output it renders (a fallback's, when one serves). */
  model: string;
  /** When the request's first job was enqueued (epoch ms): a completion's `created`. */
  createdMs: number;
}

/** Turns a job's output into the protocol's wire format. It holds no lifecycle state of its own. */
export interface OutputRenderer {
  /** `logprobs` only when the request asked for them. */
  delta(choice: number, content: string, logprobs?: TokenLogprob[]): void;
  /** A piece of a tool call; the first piece of each call carries its id and name. */
  toolCall(piece: ToolCallMessage): void;
  image(message: ImageMessage): void;
}

/** A streamed answer's renderer: it writes events as output arrives and ends the stream. */
export interface StreamRenderer extends OutputRenderer {
  /** The job's end: the final events and the protocol's end. */
  done(message: DoneMessage): void;
  /** A failure after the stream opened: the protocol's error event, then its end. */
  error(error: GatewayError): void;
  /** The stream went on elsewhere (resumed on another gateway, or by another client): the connection closes. */
  moved(): void;
}

/** A JSON answer's renderer: it collects output and gives the whole body at the end. */
export interface JsonRenderer<T> extends OutputRenderer {
  done(message: DoneMessage): T | Promise<T>;
}

/** How a stream's events look on the wire. */
export interface StreamFormat {
  /**
   * The protocol's name, kept in a resumable stream's meta: a stream is resumed only through the protocol
   * that started it.
   */
  protocol: string;
  /** The protocol's last line (`data: [DONE]` for chat completions), or null when it has none. */
  endLine?: string | null;
  /** The event written after a silence (`: keep-alive` by default; the Messages API's `event: ping`). */
  keepAlive?: string;
}

/** How the response is delivered, as the front-end chose it. */
export type Delivery<T = unknown> =
  /** One JSON answer; `refuse` tells the session the answer cannot be given (it outgrew its bound). */
  | {
      mode: 'json';
      renderer(context: RenderContext, refuse: (error: GatewayError) => void): JsonRenderer<T>;
    }
  /** Server-sent events: the 200 goes out when the session commits to a model. */
  | {
      mode: 'stream';
      format: StreamFormat;
      renderer(events: EventSink, context: RenderContext): StreamRenderer;
    }
  /**
   * No client ever (a background response): the job runs to its end and the renderer records the outcome;
   * `run` returns once the job is queued. Its job keeps a replay log whatever the model's default (when
   * replay logs are on) and runs on without its gateway, so its stream can be followed through `format`'s
   * protocol and its outcome read back after this gateway is gone.
   */
  | { mode: 'background'; format: StreamFormat; renderer(context: RenderContext): StreamRenderer };

/** The response header that names the model whose answer the client gets (a fallback's, when one served). */
export const SERVED_MODEL_HEADER = 'x-served-model';
