import { GatewayError, type ReplyMessage } from '@mgw/contracts';
import { jobFailureFallsBack, type FallbackReason } from '../models/fallback.policy';
import type {
  Attempt,
  ClientState,
  Effect,
  Ending,
  SessionEvent,
  SessionPlan,
  SessionState,
  Step,
  StopReason,
} from './session.types';

/** The compiler's proof that a switch handled every member of a union. */
export function assertNever(value: never): never {
  throw new Error(`unhandled: ${JSON.stringify(value)}`);
}

type Named<N extends SessionState['name']> = Extract<SessionState, { name: N }>;
/** A state in which a job of the request exists (or its add is in flight). */
type JobState = Named<'enqueueing'> | Named<'queued'> | Named<'running'>;
type LiveState = Exclude<SessionState, Named<'idle'> | Named<'ended'>>;

const IGNORED: Step = { next: null, effects: [] };
const RENDER: Effect = { type: 'render' };
/** The hot path: one more piece of output of a running job, rendered as it is. */
const RENDER_ONLY: Step = { next: null, effects: [RENDER] };

const stay = (...effects: Effect[]): Step => ({ next: null, effects });
const go = (next: SessionState, ...effects: Effect[]): Step => ({ next, effects });

/** The first attempt of a session: the requested model, nothing known yet about its fallbacks. */
export function firstAttempt(model: string): Attempt {
  return {
    model,
    index: 0,
    remaining: [],
    refusal: null,
    switched: false,
    startWithinMs: undefined,
    resumable: false,
    output: false,
  };
}

/** A session's first state. */
export function idle(plan: SessionPlan): SessionState {
  return { name: 'idle', plan, client: plan.delivery === 'background' ? 'none' : 'waiting' };
}

/**
 * The whole life of one request, as a pure function: the next state and the effects the session carries
 * out, for every state and every event. No I/O, no timers, no clock: whatever the world says comes in as an
 * event, whatever must happen goes out as an effect. Each event's handler switches over every state, so
 * the compiler rejects a state or an event left unhandled.
 */
export function transition(state: SessionState, event: SessionEvent): Step {
  switch (event.type) {
    case 'reply':
      return onReply(state, event.message);
    case 'start':
      return onStart(state, event.model);
    case 'resumed':
      return onResumed(state, event.model);
    case 'admitted':
      return onAdmitted(state, event);
    case 'refused':
      return onRefused(state, event);
    case 'enqueued':
      return onEnqueued(state);
    case 'enqueue_failed':
      return onEnqueueFailed(state, event.error);
    case 'protocol_error':
      return onProtocolError(state, event.error);
    case 'connection_lost':
      return onConnectionLost(state);
    case 'client_gone':
      return onClientGone(state);
    case 'deadline':
      return onDeadline(state);
    case 'start_timeout':
      return onStartTimeout(state);
    case 'open_timer':
      return onOpenTimer(state);
    case 'grace_expired':
      return onGraceExpired(state);
    case 'worker_silent':
      return onWorkerSilent(state);
    case 'removed':
      return onRemoved(state, event);
    case 'taken_over':
      return onTakenOver(state);
    case 'caught_up':
      return onCaughtUp(state);
    case 'replay_check':
      return onReplayCheck(state);
    case 'resume_failed':
      return onResumeFailed(state, event.error);
    case 'shutdown':
      return onShutdown(state, event.error);
    case 'answer_too_large':
      return onAnswerTooLarge(state, event.error);
    default:
      return assertNever(event);
  }
}

// ─── the client ────────────────────────────────────────────────────────────────────────────────────────

/** A failure is told in the answer already under way (an error event), not as the answer's status. */
function committed(client: ClientState): boolean {
  return client === 'opening' || client === 'open' || client === 'detached';
}

/** A stream that has not sent its 200 yet, and whether output now opens it. */
function opensAtOutput(state: LiveState): boolean {
  const { client } = state;
  return (
    state.plan.delivery === 'stream' && (client === 'waiting' || client === 'opening' || client === 'due')
  );
}

/** Whether a client that leaves lets the job go on: for the resume grace, or to its end. */
function keepsRunning(state: LiveState): 'detach' | 'outlive' | null {
  if (state.client === 'open' && state.attempt.resumable && state.plan.resumeGrace) return 'detach';
  return state.plan.outlivesClient ? 'outlive' : null;
}

/** How the client hears that the request failed with `error`. */
function tell(state: LiveState, error: GatewayError): Effect[] {
  switch (state.client) {
    case 'waiting':
    case 'due':
      return [{ type: 'reject', error }];
    case 'opening':
      return [
        { type: 'open_stream', servedModel: state.attempt.model },
        { type: 'render_error', error },
      ];
    case 'open':
    case 'detached':
    case 'none':
      return [{ type: 'render_error', error }];
    case 'gone':
      return [];
    default:
      return assertNever(state.client);
  }
}

/** A failure before any job exists: its status is the answer, unless a stream is open already. */
function answer(state: LiveState, error: GatewayError): Effect[] {
  const { client } = state;
  return client === 'opening' || client === 'none' ? [{ type: 'reject', error }] : tell(state, error);
}

// ─── the way out ───────────────────────────────────────────────────────────────────────────────────────

/**
 * The `ended` transition, the only one: the admission hold ends with it (handed over when the stream went
 * on elsewhere, rolled back when the job never got into its queue, else released — once: a `stopping`
 * state released it on the way in), then the books close; `after` runs once the request is over.
 */
function finish(
  state: LiveState,
  ending: Ending,
  ok: boolean,
  before: readonly Effect[],
  after: readonly Effect[] = [],
): Step {
  const effects: Effect[] = [...before];
  if (ending === 'enqueue_failed') effects.push({ type: 'hold', op: 'rollback' });
  else if (state.name !== 'stopping') {
    effects.push({ type: 'hold', op: ending === 'moved' ? 'hand_over' : 'release' });
  }
  effects.push({ type: 'end', ending, ok }, ...after);
  return go({ name: 'ended', ending }, ...effects);
}

/**
 * Stops the job and tells the client `error` (null: nothing to tell). A running job is cancelled on its
 * worker and the request ends. A waiting one is taken off its queue: with `now` the request ends at once
 * (nothing can wait for the removal: the deadline passed, the replies are lost), otherwise it is
 * `stopping` until the removal or the worker's `started` says the job is gone.
 */
function stop(
  state: JobState,
  reason: StopReason,
  error: GatewayError | null,
  options: { now?: boolean; ending?: Ending; client?: ClientState } = {},
): Step {
  const told = error === null ? [] : tell(state, error);
  const ending = options.ending ?? reason;
  const client = options.client ?? state.client;
  if (state.name === 'running') {
    return finish(state, ending, false, [{ type: 'cancel', workerId: state.workerId, reason }], told);
  }
  const remove: Effect = { type: 'remove_waiting', purpose: 'stop' };
  if (options.now === true) return finish(state, ending, false, [remove], told);
  const added = state.name === 'queued';
  return go(
    { name: 'stopping', plan: state.plan, client, attempt: state.attempt, reason, added },
    ...(added ? [remove] : []),
    { type: 'hold', op: 'release' },
    ...told,
  );
}

/**
 * The attempt's job failed (`error`), or never started (`no_worker_started`). Before anything reached the
 * client, with a model left, for a reason that is not the client's, the next model gets the request;
 * otherwise the client hears the error — the requested model's own, when the failure is the model's.
 */
function attemptFailed(state: JobState, error: GatewayError, ending: Ending, reason: FallbackReason): Step {
  const { attempt } = state;
  const { output } = attempt;
  const next = attempt.remaining[0];
  if (!output && !committed(state.client) && next !== undefined && jobFailureFallsBack(error)) {
    const nextAttempt: Attempt = {
      model: next,
      index: attempt.index + 1,
      remaining: attempt.remaining.slice(1),
      refusal: attempt.refusal ?? error,
      switched: true,
      startWithinMs: undefined,
      resumable: false,
      output: false,
    };
    return go(
      { name: 'resolving', plan: state.plan, client: state.client, attempt: nextAttempt },
      { type: 'disarm', timer: 'start_timeout' },
      { type: 'resolve', model: next, from: attempt.model, reason, switched: true },
    );
  }
  const told = committed(state.client)
    ? tell(state, error)
    : tell(state, !output && jobFailureFallsBack(error) ? (attempt.refusal ?? error) : error);
  return finish(state, ending, false, [], told);
}

// ─── events ────────────────────────────────────────────────────────────────────────────────────────────

function onStart(state: SessionState, model: string): Step {
  switch (state.name) {
    case 'idle':
      return go(
        { name: 'resolving', plan: state.plan, client: state.client, attempt: firstAttempt(model) },
        { type: 'resolve', model, from: null, reason: null, switched: false },
      );
    case 'resolving':
    case 'enqueueing':
    case 'queued':
    case 'running':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

/** A resume is this machine's other entry: the job exists, the stream opens at once. */
function onResumed(state: SessionState, model: string): Step {
  switch (state.name) {
    case 'idle':
      return go(
        {
          name: 'queued',
          plan: state.plan,
          client: 'open',
          attempt: { ...firstAttempt(model), resumable: true },
        },
        { type: 'route_resumed' },
        { type: 'open_stream', servedModel: null },
      );
    case 'resolving':
    case 'enqueueing':
    case 'queued':
    case 'running':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onAdmitted(state: SessionState, event: Extract<SessionEvent, { type: 'admitted' }>): Step {
  switch (state.name) {
    case 'resolving': {
      if (state.client === 'gone' && !state.plan.outlivesClient) {
        return finish(state, 'client_disconnected', false, []);
      }
      const { attempt, plan } = state;
      const remaining = attempt.index === 0 && event.fallbacks !== null ? event.fallbacks : attempt.remaining;
      const bound = remaining.length > 0 ? plan.startWaitBoundMs : undefined;
      const startWithinMs =
        event.startWithinMs === undefined || bound === undefined
          ? event.startWithinMs
          : Math.min(event.startWithinMs, bound);
      const model = event.model ?? attempt.model;
      const next: Attempt = { ...attempt, model, remaining, startWithinMs, resumable: event.resumable };
      // A stream without fallbacks is committed to its model: it opens once its job is queued.
      const client =
        state.client === 'waiting' &&
        plan.delivery === 'stream' &&
        !attempt.switched &&
        remaining.length === 0
          ? 'opening'
          : state.client;
      return go(
        { name: 'enqueueing', plan, client, attempt: next },
        {
          type: 'enqueue',
          model,
          hasFallback: remaining.length > 0,
          resumable: event.resumable,
        },
      );
    }
    case 'idle':
    case 'enqueueing':
    case 'queued':
    case 'running':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

/** The attempt's model cannot take the request: the next one may, or the client hears why not. */
function nextModelOrAnswer(
  state: Named<'resolving'> | Named<'enqueueing'>,
  error: GatewayError,
  fallsBack: FallbackReason | null,
  remaining: readonly string[],
  before: readonly Effect[] = [],
): Step {
  const { attempt } = state;
  const next = remaining[0];
  if (fallsBack !== null && next !== undefined) {
    const nextAttempt: Attempt = {
      ...attempt,
      model: next,
      index: attempt.index + 1,
      remaining: remaining.slice(1),
      refusal: attempt.refusal ?? error,
      startWithinMs: undefined,
      resumable: false,
      output: false,
    };
    return go(
      { name: 'resolving', plan: state.plan, client: state.client, attempt: nextAttempt },
      ...before,
      { type: 'resolve', model: next, from: attempt.model, reason: fallsBack, switched: attempt.switched },
    );
  }
  const told = answer(state, fallsBack === null ? error : (attempt.refusal ?? error));
  return finish(state, 'refused', false, before, told);
}

function onRefused(state: SessionState, event: Extract<SessionEvent, { type: 'refused' }>): Step {
  switch (state.name) {
    case 'resolving': {
      if (state.client === 'gone' && !state.plan.outlivesClient) {
        return finish(state, 'client_disconnected', false, []);
      }
      const { attempt } = state;
      const remaining = attempt.index === 0 && event.fallbacks !== null ? event.fallbacks : attempt.remaining;
      return nextModelOrAnswer(state, event.error, event.fallsBack, remaining);
    }
    case 'idle':
    case 'enqueueing':
    case 'queued':
    case 'running':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

/** Once the job is in its queue: the scale-to-zero wait, and a stream without fallbacks opens. */
function whenQueued(state: JobState): { client: ClientState; effects: Effect[] } {
  const effects: Effect[] = [
    { type: 'hold', op: 'enqueued' },
    { type: 'count', what: 'enqueued' },
  ];
  const { attempt, plan } = state;
  if (state.name === 'enqueueing' && attempt.startWithinMs !== undefined) {
    effects.push({ type: 'arm', timer: 'start_timeout', ms: attempt.startWithinMs });
  }
  let { client } = state;
  if (client === 'opening' || client === 'due') {
    effects.push({ type: 'open_stream', servedModel: attempt.model });
    client = 'open';
  } else if (client === 'waiting' && plan.delivery === 'stream' && !attempt.switched) {
    // A stream with fallbacks opens at its first output, or after the keep-alive bound anyway.
    effects.push({ type: 'arm', timer: 'open' });
  }
  return { client, effects };
}

function onEnqueued(state: SessionState): Step {
  switch (state.name) {
    case 'enqueueing': {
      const { client, effects } = whenQueued(state);
      return go({ name: 'queued', plan: state.plan, client, attempt: state.attempt }, ...effects);
    }
    case 'queued':
    case 'running': {
      // Replies came before the acknowledgement.
      const { client, effects } = whenQueued(state);
      return go({ ...state, client }, ...effects);
    }
    case 'stopping':
      if (state.added) return IGNORED;
      return go({ ...state, added: true }, { type: 'remove_waiting', purpose: 'stop' });
    case 'idle':
    case 'resolving':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onEnqueueFailed(state: SessionState, error: GatewayError): Step {
  switch (state.name) {
    case 'enqueueing':
      if (state.attempt.switched) {
        // A fallback's queue that cannot take the job: the next model may.
        return nextModelOrAnswer(state, error, 'unavailable', state.attempt.remaining, [
          { type: 'hold', op: 'rollback' },
        ]);
      }
      return finish(state, 'enqueue_failed', false, [], answer(state, error));
    case 'queued':
      return finish(
        state,
        'enqueue_failed',
        false,
        [{ type: 'remove_waiting', purpose: 'stop' }],
        answer(state, error),
      );
    case 'running':
      return finish(
        state,
        'enqueue_failed',
        false,
        [{ type: 'cancel', workerId: state.workerId, reason: 'connection_lost' }],
        answer(state, error),
      );
    case 'stopping':
      return state.added ? IGNORED : finish(state, 'enqueue_failed', false, []);
    case 'idle':
    case 'resolving':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onReply(state: SessionState, message: ReplyMessage): Step {
  const { kind } = message;
  if (kind === 'alive') return IGNORED;
  if (
    state.name === 'running' &&
    state.attempt.output &&
    (kind === 'delta' || kind === 'tool-call' || kind === 'image')
  ) {
    return RENDER_ONLY;
  }
  switch (state.name) {
    case 'enqueueing':
    case 'queued':
    case 'running':
      return onJobMessage(state, message);
    case 'stopping':
      return onStoppingMessage(state, message);
    case 'idle':
    case 'resolving':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onJobMessage(state: JobState, message: ReplyMessage): Step {
  switch (message.kind) {
    case 'started':
      return go(
        {
          name: 'running',
          plan: state.plan,
          client: state.client,
          attempt: state.attempt,
          workerId: message.workerId,
        },
        { type: 'disarm', timer: 'start_timeout' },
        { type: 'count', what: 'started' },
      );
    case 'alive':
      return IGNORED;
    case 'moved':
      // A client resumed the stream on another gateway; the job goes on there.
      return finish(state, 'moved', false, [], [{ type: 'render_moved' }]);
    case 'delta':
    case 'tool-call':
    case 'image': {
      const effects: Effect[] = [];
      let client = state.client;
      if (opensAtOutput(state)) {
        effects.push({ type: 'open_stream', servedModel: state.attempt.model });
        client = 'open';
      }
      if (state.attempt.output) effects.push(RENDER);
      else effects.push({ type: 'count', what: 'output' }, RENDER);
      const attempt = state.attempt.output ? state.attempt : { ...state.attempt, output: true };
      return go({ ...state, client, attempt }, ...effects);
    }
    case 'chat-done':
    case 'image-done':
    case 'embedding-done': {
      const open: Effect[] = opensAtOutput(state)
        ? [{ type: 'open_stream', servedModel: state.attempt.model }]
        : [];
      return finish(state, 'job_finished', true, open, [RENDER]);
    }
    case 'error':
      return attemptFailed(state, GatewayError.fromWire(message.error), 'job_finished', 'failed');
    default:
      return assertNever(message);
  }
}

/** The client has its ending or is gone: only the job's fate matters now. */
function onStoppingMessage(state: Named<'stopping'>, message: ReplyMessage): Step {
  switch (message.kind) {
    case 'started':
      // Picked up in the instant between: it could not be removed, so its worker is told to stop.
      return finish(state, state.reason, false, [
        { type: 'cancel', workerId: message.workerId, reason: state.reason },
      ]);
    case 'moved':
      return finish(state, 'moved', false, []);
    case 'chat-done':
    case 'image-done':
    case 'embedding-done':
      return finish(state, 'job_finished', true, []);
    case 'error':
      return finish(state, 'job_finished', false, []);
    case 'alive':
    case 'delta':
    case 'tool-call':
    case 'image':
      return IGNORED;
    default:
      return assertNever(message);
  }
}

function onProtocolError(state: SessionState, error: GatewayError): Step {
  switch (state.name) {
    case 'enqueueing':
    case 'queued':
    case 'running':
      return stop(state, 'protocol_error', error);
    case 'idle':
    case 'resolving':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

export const CONNECTION_LOST_MESSAGE =
  'The connection to the job queue was lost while waiting for the answer. Try again shortly.';

function onConnectionLost(state: SessionState): Step {
  switch (state.name) {
    case 'enqueueing':
    case 'queued':
    case 'running':
      // No reply can arrive any more: the request ends now, whether or not its job could be taken back.
      return stop(state, 'connection_lost', GatewayError.serviceUnavailable(CONNECTION_LOST_MESSAGE), {
        now: true,
      });
    case 'stopping':
      return finish(state, 'connection_lost', false, []);
    case 'idle':
    case 'resolving':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onClientGone(state: SessionState): Step {
  switch (state.name) {
    case 'idle':
    case 'ended':
      return IGNORED;
    default:
      break;
  }
  const { client } = state;
  if (client === 'gone' || client === 'detached' || client === 'none') return IGNORED;
  const closed: Effect = { type: 'reject', error: GatewayError.clientClosed() };
  switch (state.name) {
    case 'resolving':
    case 'stopping':
      // Nothing runs for it yet (the admission under way ends the request), or it is stopping already.
      return go({ ...state, client: 'gone' }, closed);
    case 'enqueueing':
    case 'queued':
    case 'running': {
      const keep = keepsRunning(state);
      if (keep === 'detach') {
        return go(
          { ...state, client: 'detached' },
          { type: 'count', what: 'client_disconnected' },
          { type: 'arm', timer: 'grace' },
        );
      }
      if (keep === 'outlive') return go({ ...state, client: 'gone' }, closed);
      const left: Effect = { type: 'count', what: 'client_disconnected' };
      const step = stop(state, 'client_disconnected', null, { client: 'gone' });
      return { next: step.next, effects: [left, ...step.effects, closed] };
    }
    default:
      return assertNever(state);
  }
}

function onDeadline(state: SessionState): Step {
  switch (state.name) {
    case 'resolving':
      return finish(
        state,
        'deadline_exceeded',
        false,
        [],
        tell(state, GatewayError.deadlineExceeded(state.plan.deadlineMs)),
      );
    case 'enqueueing':
    case 'queued':
    case 'running':
      return stop(state, 'deadline_exceeded', GatewayError.deadlineExceeded(state.plan.deadlineMs), {
        now: true,
      });
    case 'stopping':
      return finish(state, 'deadline_exceeded', false, []);
    case 'idle':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onStartTimeout(state: SessionState): Step {
  switch (state.name) {
    case 'queued':
      // Taken back first: only a job still waiting fails; one a worker took meanwhile is left to answer.
      return stay({ type: 'remove_waiting', purpose: 'start_timeout' });
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'running':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onOpenTimer(state: SessionState): Step {
  switch (state.name) {
    case 'resolving':
    case 'enqueueing':
      // The next model is being found: the stream opens once its job is queued.
      return state.client === 'waiting' ? go({ ...state, client: 'due' }) : IGNORED;
    case 'queued':
    case 'running':
      if (state.client !== 'waiting' || state.plan.delivery !== 'stream') return IGNORED;
      return go({ ...state, client: 'open' }, { type: 'open_stream', servedModel: state.attempt.model });
    case 'idle':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onGraceExpired(state: SessionState): Step {
  switch (state.name) {
    case 'queued':
    case 'running': {
      if (state.client !== 'detached') return IGNORED;
      // A job that outlives its client (a background response's) runs on: only the resume window closes.
      if (state.plan.outlivesClient) return go({ ...state, client: 'gone' });
      const step = stop(state, 'client_disconnected', null, { client: 'gone' });
      return { next: step.next, effects: [{ type: 'count', what: 'grace_expired' }, ...step.effects] };
    }
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

export const WORKER_SILENT_MESSAGE = 'The model worker stopped responding while generating the answer.';

function onWorkerSilent(state: SessionState): Step {
  switch (state.name) {
    case 'running': {
      if (state.attempt.output) {
        // After output the answer cannot be completed.
        const step = stop(state, 'worker_unresponsive', GatewayError.workerFailed(WORKER_SILENT_MESSAGE));
        const log: Effect = { type: 'log', message: `worker ${state.workerId} stopped responding` };
        return { next: step.next, effects: [log, ...step.effects] };
      }
      // Before any output the loss is invisible: the queue hands the job to another worker once its lock
      // expires, so the request waits for it.
      return go(
        { name: 'queued', plan: state.plan, client: state.client, attempt: state.attempt },
        {
          type: 'log',
          message: `worker ${state.workerId} stopped responding before any output; waiting for the job to run again`,
        },
      );
    }
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'queued':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onRemoved(state: SessionState, event: Extract<SessionEvent, { type: 'removed' }>): Step {
  switch (state.name) {
    case 'stopping':
      return state.added && event.removed ? finish(state, state.reason, false, []) : IGNORED;
    case 'queued':
      if (event.purpose !== 'start_timeout' || !event.removed) return IGNORED;
      return attemptFailed(
        state,
        GatewayError.modelUnavailable(state.attempt.model, state.attempt.startWithinMs),
        'no_worker_started',
        'unavailable',
      );
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'running':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onTakenOver(state: SessionState): Step {
  switch (state.name) {
    case 'enqueueing':
    case 'queued':
    case 'running':
      // Its job goes on, for the request that resumed it; its client, if still there, sees the connection close.
      return finish(state, 'moved', false, [], [{ type: 'render_moved' }]);
    case 'idle':
    case 'resolving':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onCaughtUp(state: SessionState): Step {
  switch (state.name) {
    case 'queued':
      // Armed only now: a stream that ended before its deadline is replayed whenever it is asked for. A job
      // still queued finds this gateway through the route its worker reads when it starts the job.
      return stay({ type: 'arm', timer: 'deadline' }, { type: 'count', what: 'resumed_live' });
    case 'running':
      return stay(
        { type: 'arm', timer: 'deadline' },
        { type: 'count', what: 'resumed_live' },
        { type: 'reattach', workerId: state.workerId },
        // The job may end before its worker hears the reattach: its last messages are then in the log only.
        { type: 'arm', timer: 'replay' },
      );
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onReplayCheck(state: SessionState): Step {
  switch (state.name) {
    case 'queued':
    case 'running':
      return stay({ type: 'catch_up' });
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onResumeFailed(state: SessionState, error: GatewayError): Step {
  switch (state.name) {
    case 'queued':
    case 'running':
      return stop(state, 'connection_lost', error);
    case 'idle':
    case 'resolving':
    case 'enqueueing':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onShutdown(state: SessionState, error: GatewayError): Step {
  switch (state.name) {
    case 'resolving':
      return finish(state, 'gateway_shutdown', false, [], answer(state, error));
    case 'enqueueing':
    case 'queued':
    case 'running':
      return stop(state, 'gateway_shutdown', error);
    case 'idle':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}

function onAnswerTooLarge(state: SessionState, error: GatewayError): Step {
  switch (state.name) {
    case 'enqueueing':
    case 'queued':
    case 'running':
      // Nobody gets this answer: its job stops now instead of running on to its end. Its worker hears a
      // reason it knows (workers refuse a cancel reason they do not know).
      return stop(state, 'protocol_error', error, { now: true, ending: 'answer_too_large' });
    case 'idle':
    case 'resolving':
    case 'stopping':
    case 'ended':
      return IGNORED;
    default:
      return assertNever(state);
  }
}
