import { GatewayError, type ReplyMessage } from '@mgw/contracts';
import { firstAttempt } from './session.machine';
import type {
  Attempt,
  Effect,
  EventType,
  SessionEvent,
  SessionPlan,
  SessionState,
  Step,
} from './session.types';

/** Test support for the machine's table: sample states and events, and a step written as one line. */

const requestId = 'req_table_01';
const stream: SessionPlan = {
  delivery: 'stream',
  outlivesClient: false,
  resumeGrace: true,
  deadlineMs: 60_000,
  startWaitBoundMs: 7_500,
};
const json: SessionPlan = { ...stream, delivery: 'json', startWaitBoundMs: undefined };
const resumable: Attempt = { ...firstAttempt('a'), resumable: true };
const resumableWithOutput: Attempt = { ...resumable, output: true };
const withFallback: Attempt = { ...firstAttempt('a'), remaining: ['b'] };

/** One state of each name, and the variants whose rows differ in ways worth seeing. */
export const SAMPLE_STATES = {
  idle: { name: 'idle', plan: stream, client: 'waiting' },
  resolving: { name: 'resolving', plan: stream, client: 'waiting', attempt: firstAttempt('a') },
  enqueueing: { name: 'enqueueing', plan: stream, client: 'opening', attempt: resumable },
  'queued (json, a fallback left)': { name: 'queued', plan: json, client: 'waiting', attempt: withFallback },
  'queued (resumable stream)': { name: 'queued', plan: stream, client: 'open', attempt: resumable },
  'running (json, a fallback left, no output)': {
    name: 'running',
    plan: json,
    client: 'waiting',
    attempt: withFallback,
    workerId: 'w1',
  },
  'running (resumable stream, output)': {
    name: 'running',
    plan: stream,
    client: 'open',
    attempt: resumableWithOutput,
    workerId: 'w1',
  },
  'running (detached)': {
    name: 'running',
    plan: stream,
    client: 'detached',
    attempt: resumableWithOutput,
    workerId: 'w1',
  },
  stopping: {
    name: 'stopping',
    plan: stream,
    client: 'gone',
    attempt: firstAttempt('a'),
    reason: 'client_disconnected',
    added: true,
  },
  ended: { name: 'ended', ending: 'job_finished' },
} as const satisfies Record<string, SessionState>;

type Payload = ReplyMessage extends infer M
  ? M extends ReplyMessage
    ? Omit<M, 'requestId' | 'seq'>
    : never
  : never;
const reply = (message: Payload): SessionEvent => ({
  type: 'reply',
  message: { requestId, seq: 1, ...message },
});

/** One sample of every event; the reply of each kind of message, and removals of both purposes. */
export const SAMPLE_EVENTS = {
  start: { type: 'start', model: 'a' },
  resumed: { type: 'resumed', model: 'a' },
  admitted: { type: 'admitted', fallbacks: [], startWithinMs: undefined, resumable: false },
  refused: {
    type: 'refused',
    error: GatewayError.modelUnavailable('a'),
    fallsBack: 'unavailable',
    fallbacks: ['b'],
  },
  enqueued: { type: 'enqueued' },
  enqueue_failed: { type: 'enqueue_failed', error: GatewayError.serviceUnavailable('down') },
  'reply started': reply({ kind: 'started', workerId: 'w2' }),
  'reply alive': reply({ kind: 'alive' }),
  'reply moved': reply({ kind: 'moved' }),
  'reply delta': reply({ kind: 'delta', choice: 0, content: 'x' }),
  'reply tool-call': reply({ kind: 'tool-call', choice: 0, index: 0, arguments: '{' }),
  'reply image': reply({ kind: 'image', index: 0, key: 'k', revisedPrompt: 'p' }),
  'reply chat-done': reply({
    kind: 'chat-done',
    finishReasons: ['stop'],
    usage: { prompt_tokens: 1, completion_tokens: 1 },
  }),
  'reply image-done': reply({ kind: 'image-done', count: 1 }),
  'reply error': reply({ kind: 'error', error: GatewayError.workerFailed('upstream 500').toWire() }),
  protocol_error: { type: 'protocol_error', error: GatewayError.workerFailed('gap') },
  connection_lost: { type: 'connection_lost' },
  client_gone: { type: 'client_gone' },
  deadline: { type: 'deadline' },
  start_timeout: { type: 'start_timeout' },
  open_timer: { type: 'open_timer' },
  grace_expired: { type: 'grace_expired' },
  worker_silent: { type: 'worker_silent' },
  'removed (stop)': { type: 'removed', removed: true, purpose: 'stop' },
  'removed (start_timeout)': { type: 'removed', removed: true, purpose: 'start_timeout' },
  taken_over: { type: 'taken_over' },
  caught_up: { type: 'caught_up' },
  replay_check: { type: 'replay_check' },
  resume_failed: { type: 'resume_failed', error: GatewayError.serviceUnavailable('no route') },
  shutdown: { type: 'shutdown', error: GatewayError.serviceUnavailable('shutting down') },
  answer_too_large: { type: 'answer_too_large', error: GatewayError.workerFailed('too large') },
} as const satisfies Record<string, SessionEvent>;

/** Every event type has a sample (the compiler checks the keys' types cover the union). */
export const SAMPLED_TYPES: readonly EventType[] = [
  ...new Set(Object.values(SAMPLE_EVENTS).map((event: SessionEvent) => event.type)),
];

function effectText(effect: Effect): string {
  switch (effect.type) {
    case 'resolve':
      return `resolve ${effect.model}${effect.from === null ? '' : ` from ${effect.from} (${effect.reason})`}`;
    case 'enqueue':
      return `enqueue ${effect.model}${effect.hasFallback ? ' +fallback' : ''}${effect.resumable ? ' +resume' : ''}`;
    case 'remove_waiting':
      return `remove (${effect.purpose})`;
    case 'cancel':
      return `cancel ${effect.workerId} ${effect.reason}`;
    case 'reattach':
      return `reattach ${effect.workerId}`;
    case 'arm':
      return `arm ${effect.timer}${effect.ms === undefined ? '' : ` ${effect.ms}`}`;
    case 'disarm':
      return `disarm ${effect.timer}`;
    case 'open_stream':
      return `open ${effect.servedModel ?? '-'}`;
    case 'render_error':
      return `render error ${effect.error.status}`;
    case 'reject':
      return `reject ${effect.error.status}`;
    case 'hold':
      return `hold ${effect.op}`;
    case 'count':
      return `count ${effect.what}`;
    case 'end':
      return `end ${effect.ending}${effect.ok ? ' ok' : ''}`;
    case 'render':
    case 'render_moved':
    case 'log':
    case 'route_resumed':
    case 'catch_up':
      return effect.type;
  }
}

/**
 * A step as one line: `=` when the state stays, else the next state's name (and its client, or its
 * attempt's model, where they changed), then the effects in order. `ignored` when nothing happens.
 */
export function stepText(from: SessionState, step: Step): string {
  const { next, effects } = step;
  if (next === null && effects.length === 0) return 'ignored';
  let head = '=';
  if (next !== null) {
    head = next.name === 'ended' ? `ended ${next.ending}` : next.name;
    if (next.name !== 'ended' && next.name !== 'idle') {
      if (from.name === 'ended' || from.client !== next.client) head += ` [${next.client}]`;
      if (from.name === 'idle' || from.name === 'ended' || from.attempt.model !== next.attempt.model) {
        head += ` (${next.attempt.model})`;
      }
      if (from.name !== 'idle' && from.name !== 'ended' && !from.attempt.output && next.attempt.output) {
        head += ' +output';
      }
    } else if (next.name === 'idle' && (from.name === 'ended' || from.client !== next.client)) {
      head += ` [${next.client}]`;
    }
  }
  return effects.length === 0 ? head : `${head} | ${effects.map(effectText).join(', ')}`;
}
