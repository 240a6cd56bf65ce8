import type { CancelMessage, GatewayError, ReplyMessage } from '@mgw/contracts';
import type { FallbackReason } from '../models/fallback.policy';

/** Why a job is being stopped; its worker is told this when the job has to be cancelled. */
export type StopReason = CancelMessage['reason'];

/** How a session ended: one word, set once, by the `ended` transition. */
export type Ending =
  /** The worker's last message (done or error) arrived: the job is over on its own. */
  | 'job_finished'
  /** The job could not be enqueued: the client is answered 503, no job exists. */
  | 'enqueue_failed'
  /** A scale-to-zero model got no worker in time and no fallback took over. */
  | 'no_worker_started'
  /** No model could take the request (or the client left before one did): no job exists. */
  | 'refused'
  /** The stream went on elsewhere: resumed on another gateway, or by another client here. */
  | 'moved'
  /** A JSON answer outgrew what the gateway assembles: its job is cancelled, the client gets a 502. */
  | 'answer_too_large'
  /** Stopped by the gateway: the job was removed from its queue or cancelled on its worker. */
  | StopReason;

/** How the answer reaches the client, as the front-end chose it. */
export type DeliveryMode = 'json' | 'stream' | 'background';

/** What holds for a session's whole life. */
export interface SessionPlan {
  readonly delivery: DeliveryMode;
  /** The job runs to its end even when the client leaves (a stored completion; background). */
  readonly outlivesClient: boolean;
  /** A resumable stream's client that leaves is waited for (RESUME_GRACE_MS > 0); otherwise it is gone. */
  readonly resumeGrace: boolean;
  /** The request's deadline (for its 504). */
  readonly deadlineMs: number;
  /**
   * The longest a job may wait for a scale-to-zero model's first worker while a fallback remains (a stream
   * commits to its model after the keep-alive bound, so it falls back before then); undefined: no bound.
   */
  readonly startWaitBoundMs: number | undefined;
}

/**
 * The client's side of a session:
 * - `waiting`: nothing sent yet; a stream opens at its first output (it has fallbacks), a JSON answer is
 *   sent whole at the end;
 * - `opening`: nothing sent yet, but committed: a stream without fallbacks opens as soon as its job is
 *   queued, and a failure from then on is its error event;
 * - `due`: a stream with fallbacks whose keep-alive bound passed while the next model was being found: it
 *   opens as soon as that model's job is queued;
 * - `open`: the stream's headers are sent;
 * - `detached`: the client of a resumable stream left; the job goes on for the resume grace;
 * - `gone`: the client left and nobody resumes (the job stops, unless it outlives its client);
 * - `none`: a background request: there never is a client.
 */
export type ClientState = 'waiting' | 'opening' | 'due' | 'open' | 'detached' | 'gone' | 'none';

/** One model tried for the request: the requested one (index 0), or a fallback. */
export interface Attempt {
  readonly model: string;
  readonly index: number;
  /** The models that may still serve the request, in order, if this one cannot. */
  readonly remaining: readonly string[];
  /** The requested model's error, once a model could not serve: what the client hears if none can. */
  readonly refusal: GatewayError | null;
  /** This attempt replaces a job that failed before any output (its enqueue failing is a refusal). */
  readonly switched: boolean;
  /** A scale-to-zero model without a live worker: how long its job may wait for one. */
  readonly startWithinMs: number | undefined;
  /** Its job keeps a replay log: an open client that leaves detaches for the resume grace. */
  readonly resumable: boolean;
  /** Its job's output reached the gateway: a failure can no longer fall back, a lost worker fails it. */
  readonly output: boolean;
}

interface Live {
  readonly plan: SessionPlan;
  readonly client: ClientState;
}

/**
 * Where a session is. Every state but `idle` and `ended` has an attempt; only `running` has a worker.
 *
 * ```
 * idle ─start─▶ resolving ─admitted─▶ enqueueing ─enqueued─▶ queued ─started─▶ running ─done/error─▶ ended
 *                  ▲  refused (next model)            │           ▲  silent, no output     │
 *                  └──────── job failed before any output ────────┴────────────────────────┘
 * idle ─resumed─▶ queued (a stream resumed here: its job exists already)
 * enqueueing / queued ─client gone, failure─▶ stopping ─removed / started (cancel) / deadline─▶ ended
 * ```
 */
export type SessionState =
  /** Created: nothing has happened yet. */
  | { readonly name: 'idle'; readonly plan: SessionPlan; readonly client: ClientState }
  /** The attempt's model is being resolved and admitted: no job of the request exists. */
  | (Live & { readonly name: 'resolving'; readonly attempt: Attempt })
  /** The job's add is in flight; its replies may already arrive (the route is registered first). */
  | (Live & { readonly name: 'enqueueing'; readonly attempt: Attempt })
  /** The job waits in its queue; no worker has it (again so after its worker went silent before output). */
  | (Live & { readonly name: 'queued'; readonly attempt: Attempt })
  /** A worker runs the job and must keep speaking within the worker silence limit. */
  | (Live & {
      readonly name: 'running';
      readonly attempt: Attempt;
      readonly workerId: string;
    })
  /**
   * The job must stop while no worker is known to run it: its removal is in flight (or waits for the add
   * to land, `added` false); a worker that took it meanwhile is cancelled by its `started`.
   */
  | (Live & {
      readonly name: 'stopping';
      readonly attempt: Attempt;
      readonly reason: StopReason;
      readonly added: boolean;
    })
  /** Nothing happens any more. */
  | { readonly name: 'ended'; readonly ending: Ending };

export type StateName = SessionState['name'];

/** Every input of a session. */
export type SessionEvent =
  /** Serve the request, starting with `model` (the requested one, or the kind's default). */
  | { readonly type: 'start'; readonly model: string }
  /** A stream resumed here: its job exists (queued, or running on the worker its replay log names). */
  | { readonly type: 'resumed'; readonly model: string }
  /** The attempt's model takes the request. `fallbacks`: the requested model's list (first attempt only). */
  | {
      readonly type: 'admitted';
      /**
       * The model's own id when the attempt asked for it by an alias: the job, the answer and the usage
       * name it from here on. Absent: the attempt's model as asked.
       */
      readonly model?: string;
      readonly fallbacks: readonly string[] | null;
      readonly startWithinMs: number | undefined;
      readonly resumable: boolean;
    }
  /**
   * The attempt's model cannot take it; `fallsBack` says whether the next model may try (and why the
   * counter says it did not serve), null when the error is the answer whatever the model.
   */
  | {
      readonly type: 'refused';
      readonly error: GatewayError;
      readonly fallsBack: FallbackReason | null;
      readonly fallbacks: readonly string[] | null;
    }
  | { readonly type: 'enqueued' }
  | { readonly type: 'enqueue_failed'; readonly error: GatewayError }
  | { readonly type: 'reply'; message: ReplyMessage }
  /** The reply stream broke (a gap, a malformed message); the error is what the client hears. */
  | { readonly type: 'protocol_error'; readonly error: GatewayError }
  /** The reply subscription dropped: what was published meanwhile is lost. */
  | { readonly type: 'connection_lost' }
  /** The client left (or stopped reading: its stream was cut). */
  | { readonly type: 'client_gone' }
  | { readonly type: 'deadline' }
  | { readonly type: 'start_timeout' }
  | { readonly type: 'open_timer' }
  | { readonly type: 'grace_expired' }
  /** The running job's worker has been silent past the worker silence limit (WORKER_SILENCE_MS). */
  | { readonly type: 'worker_silent' }
  /** The result of taking the job off its queue (for a stop, or because no worker started in time). */
  | { readonly type: 'removed'; readonly removed: boolean; readonly purpose: RemovalPurpose }
  /** Another request here resumed this stream. */
  | { readonly type: 'taken_over' }
  /** A resumed stream's replay reached the live stream. */
  | { readonly type: 'caught_up' }
  /** A resumed stream's worker may have ended before it heard the reattach: look at the log again. */
  | { readonly type: 'replay_check' }
  /** A resumed stream could not be routed here. */
  | { readonly type: 'resume_failed'; readonly error: GatewayError }
  /** The gateway's drain ran out. */
  | { readonly type: 'shutdown'; readonly error: GatewayError }
  /** The JSON answer outgrew its bound; `error` is the 502 the client gets. */
  | { readonly type: 'answer_too_large'; readonly error: GatewayError };

export type EventType = SessionEvent['type'];

export type RemovalPurpose = 'stop' | 'start_timeout';

export type TimerName = 'deadline' | 'start_timeout' | 'open' | 'grace' | 'replay';

export type Count =
  'enqueued' | 'started' | 'output' | 'client_disconnected' | 'grace_expired' | 'resumed_live';

/** What a transition asks the session to do, in order. The machine never does any of it. */
export type Effect =
  /** Resolve and admit `model`; `from` (and `reason`) when it takes over from another model. */
  | {
      readonly type: 'resolve';
      readonly model: string;
      readonly from: string | null;
      readonly reason: FallbackReason | null;
      readonly switched: boolean;
    }
  /** Register the reply route and add the attempt's job. */
  | {
      readonly type: 'enqueue';
      readonly model: string;
      readonly hasFallback: boolean;
      readonly resumable: boolean;
    }
  | { readonly type: 'remove_waiting'; readonly purpose: RemovalPurpose }
  | { readonly type: 'cancel'; readonly workerId: string; readonly reason: StopReason }
  | { readonly type: 'reattach'; readonly workerId: string }
  | { readonly type: 'arm'; readonly timer: TimerName; readonly ms?: number }
  | { readonly type: 'disarm'; readonly timer: TimerName }
  /** Send the stream's 200; `servedModel` names the model whose tokens follow (null on a resume). */
  | { readonly type: 'open_stream'; readonly servedModel: string | null }
  /** Render the reply message of the event being handled. */
  | { readonly type: 'render' }
  | { readonly type: 'render_error'; readonly error: GatewayError }
  | { readonly type: 'render_moved' }
  /** The request failed before anything reached the client: `error` is its whole answer. */
  | { readonly type: 'reject'; readonly error: GatewayError }
  | { readonly type: 'hold'; readonly op: 'enqueued' | 'release' | 'hand_over' | 'rollback' }
  | { readonly type: 'count'; readonly what: Count }
  | { readonly type: 'log'; readonly message: string }
  /** A resumed stream: route its replies here through its replay gate, then name this gateway in Redis. */
  | { readonly type: 'route_resumed' }
  | { readonly type: 'catch_up' }
  /** The one way out: unregister, disarm every timer, close the books. */
  | { readonly type: 'end'; readonly ending: Ending; readonly ok: boolean };

/** A transition's result: the next state (null: unchanged) and the effects, in order. */
export interface Step {
  readonly next: SessionState | null;
  readonly effects: readonly Effect[];
}
