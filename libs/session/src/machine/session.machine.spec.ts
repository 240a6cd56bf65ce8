import { GatewayError, type ReplyMessage } from '@mgw/contracts';
import { firstAttempt, idle, transition } from './session.machine';
import { SAMPLE_EVENTS, SAMPLE_STATES, SAMPLED_TYPES, stepText } from './session-table.fixtures';
import type { EventType, SessionEvent, SessionState, StateName } from './session.types';

type StateKey = keyof typeof SAMPLE_STATES;
type EventKey = keyof typeof SAMPLE_EVENTS;

/**
 * The whole machine: every sample state × every event, each cell the next state and the effects in order
 * (`=`: the state stays; `ignored`: nothing happens). A cell missing from this table fails the compile and
 * the run; a cell that changed fails the run.
 */
const TABLE: Record<StateKey, Record<EventKey, string>> = {
  idle: {
    start: 'resolving (a) | resolve a',
    resumed: 'queued [open] (a) | route_resumed, open -',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'ignored',
    enqueue_failed: 'ignored',
    'reply started': 'ignored',
    'reply alive': 'ignored',
    'reply moved': 'ignored',
    'reply delta': 'ignored',
    'reply tool-call': 'ignored',
    'reply image': 'ignored',
    'reply chat-done': 'ignored',
    'reply image-done': 'ignored',
    'reply error': 'ignored',
    protocol_error: 'ignored',
    connection_lost: 'ignored',
    client_gone: 'ignored',
    deadline: 'ignored',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ignored',
    caught_up: 'ignored',
    replay_check: 'ignored',
    resume_failed: 'ignored',
    shutdown: 'ignored',
    answer_too_large: 'ignored',
  },
  resolving: {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'enqueueing [opening] | enqueue a',
    refused: 'resolving (b) | resolve b from a (unavailable)',
    enqueued: 'ignored',
    enqueue_failed: 'ignored',
    'reply started': 'ignored',
    'reply alive': 'ignored',
    'reply moved': 'ignored',
    'reply delta': 'ignored',
    'reply tool-call': 'ignored',
    'reply image': 'ignored',
    'reply chat-done': 'ignored',
    'reply image-done': 'ignored',
    'reply error': 'ignored',
    protocol_error: 'ignored',
    connection_lost: 'ignored',
    client_gone: 'resolving [gone] | reject 499',
    deadline: 'ended deadline_exceeded | hold release, end deadline_exceeded, reject 504',
    start_timeout: 'ignored',
    open_timer: 'resolving [due]',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ignored',
    caught_up: 'ignored',
    replay_check: 'ignored',
    resume_failed: 'ignored',
    shutdown: 'ended gateway_shutdown | hold release, end gateway_shutdown, reject 503',
    answer_too_large: 'ignored',
  },
  enqueueing: {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'queued [open] | hold enqueued, count enqueued, open a',
    enqueue_failed: 'ended enqueue_failed | hold rollback, end enqueue_failed, reject 503',
    'reply started': 'running | disarm start_timeout, count started',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | hold hand_over, end moved, render_moved',
    'reply delta': 'enqueueing [open] +output | open a, count output, render',
    'reply tool-call': 'enqueueing [open] +output | open a, count output, render',
    'reply image': 'enqueueing [open] +output | open a, count output, render',
    'reply chat-done': 'ended job_finished | open a, hold release, end job_finished ok, render',
    'reply image-done': 'ended job_finished | open a, hold release, end job_finished ok, render',
    'reply error': 'ended job_finished | hold release, end job_finished, open a, render error 502',
    protocol_error: 'stopping | hold release, open a, render error 502',
    connection_lost:
      'ended connection_lost | remove (stop), hold release, end connection_lost, open a, render error 503',
    client_gone: 'stopping [gone] | count client_disconnected, hold release, reject 499',
    deadline:
      'ended deadline_exceeded | remove (stop), hold release, end deadline_exceeded, open a, render error 504',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ended moved | hold hand_over, end moved, render_moved',
    caught_up: 'ignored',
    replay_check: 'ignored',
    resume_failed: 'ignored',
    shutdown: 'stopping | hold release, open a, render error 503',
    answer_too_large:
      'ended answer_too_large | remove (stop), hold release, end answer_too_large, open a, render error 502',
  },
  'queued (json, a fallback left)': {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'queued | hold enqueued, count enqueued',
    enqueue_failed: 'ended enqueue_failed | remove (stop), hold rollback, end enqueue_failed, reject 503',
    'reply started': 'running | disarm start_timeout, count started',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | hold hand_over, end moved, render_moved',
    'reply delta': 'queued +output | count output, render',
    'reply tool-call': 'queued +output | count output, render',
    'reply image': 'queued +output | count output, render',
    'reply chat-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply image-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply error': 'resolving (b) | disarm start_timeout, resolve b from a (failed)',
    protocol_error: 'stopping | remove (stop), hold release, reject 502',
    connection_lost: 'ended connection_lost | remove (stop), hold release, end connection_lost, reject 503',
    client_gone: 'stopping [gone] | count client_disconnected, remove (stop), hold release, reject 499',
    deadline: 'ended deadline_exceeded | remove (stop), hold release, end deadline_exceeded, reject 504',
    start_timeout: '= | remove (start_timeout)',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'resolving (b) | disarm start_timeout, resolve b from a (unavailable)',
    taken_over: 'ended moved | hold hand_over, end moved, render_moved',
    caught_up: '= | arm deadline, count resumed_live',
    replay_check: '= | catch_up',
    resume_failed: 'stopping | remove (stop), hold release, reject 503',
    shutdown: 'stopping | remove (stop), hold release, reject 503',
    answer_too_large:
      'ended answer_too_large | remove (stop), hold release, end answer_too_large, reject 502',
  },
  'queued (resumable stream)': {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'queued | hold enqueued, count enqueued',
    enqueue_failed:
      'ended enqueue_failed | remove (stop), hold rollback, end enqueue_failed, render error 503',
    'reply started': 'running | disarm start_timeout, count started',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | hold hand_over, end moved, render_moved',
    'reply delta': 'queued +output | count output, render',
    'reply tool-call': 'queued +output | count output, render',
    'reply image': 'queued +output | count output, render',
    'reply chat-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply image-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply error': 'ended job_finished | hold release, end job_finished, render error 502',
    protocol_error: 'stopping | remove (stop), hold release, render error 502',
    connection_lost:
      'ended connection_lost | remove (stop), hold release, end connection_lost, render error 503',
    client_gone: 'queued [detached] | count client_disconnected, arm grace',
    deadline:
      'ended deadline_exceeded | remove (stop), hold release, end deadline_exceeded, render error 504',
    start_timeout: '= | remove (start_timeout)',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ignored',
    'removed (start_timeout)':
      'ended no_worker_started | hold release, end no_worker_started, render error 503',
    taken_over: 'ended moved | hold hand_over, end moved, render_moved',
    caught_up: '= | arm deadline, count resumed_live',
    replay_check: '= | catch_up',
    resume_failed: 'stopping | remove (stop), hold release, render error 503',
    shutdown: 'stopping | remove (stop), hold release, render error 503',
    answer_too_large:
      'ended answer_too_large | remove (stop), hold release, end answer_too_large, render error 502',
  },
  'running (json, a fallback left, no output)': {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'running | hold enqueued, count enqueued',
    enqueue_failed:
      'ended enqueue_failed | cancel w1 connection_lost, hold rollback, end enqueue_failed, reject 503',
    'reply started': 'running | disarm start_timeout, count started',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | hold hand_over, end moved, render_moved',
    'reply delta': 'running +output | count output, render',
    'reply tool-call': 'running +output | count output, render',
    'reply image': 'running +output | count output, render',
    'reply chat-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply image-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply error': 'resolving (b) | disarm start_timeout, resolve b from a (failed)',
    protocol_error:
      'ended protocol_error | cancel w1 protocol_error, hold release, end protocol_error, reject 502',
    connection_lost:
      'ended connection_lost | cancel w1 connection_lost, hold release, end connection_lost, reject 503',
    client_gone:
      'ended client_disconnected | count client_disconnected, cancel w1 client_disconnected, hold release, end client_disconnected, reject 499',
    deadline:
      'ended deadline_exceeded | cancel w1 deadline_exceeded, hold release, end deadline_exceeded, reject 504',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'queued | log',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ended moved | hold hand_over, end moved, render_moved',
    caught_up: '= | arm deadline, count resumed_live, reattach w1, arm replay',
    replay_check: '= | catch_up',
    resume_failed:
      'ended connection_lost | cancel w1 connection_lost, hold release, end connection_lost, reject 503',
    shutdown:
      'ended gateway_shutdown | cancel w1 gateway_shutdown, hold release, end gateway_shutdown, reject 503',
    answer_too_large:
      'ended answer_too_large | cancel w1 protocol_error, hold release, end answer_too_large, reject 502',
  },
  'running (resumable stream, output)': {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'running | hold enqueued, count enqueued',
    enqueue_failed:
      'ended enqueue_failed | cancel w1 connection_lost, hold rollback, end enqueue_failed, render error 503',
    'reply started': 'running | disarm start_timeout, count started',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | hold hand_over, end moved, render_moved',
    'reply delta': '= | render',
    'reply tool-call': '= | render',
    'reply image': '= | render',
    'reply chat-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply image-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply error': 'ended job_finished | hold release, end job_finished, render error 502',
    protocol_error:
      'ended protocol_error | cancel w1 protocol_error, hold release, end protocol_error, render error 502',
    connection_lost:
      'ended connection_lost | cancel w1 connection_lost, hold release, end connection_lost, render error 503',
    client_gone: 'running [detached] | count client_disconnected, arm grace',
    deadline:
      'ended deadline_exceeded | cancel w1 deadline_exceeded, hold release, end deadline_exceeded, render error 504',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent:
      'ended worker_unresponsive | log, cancel w1 worker_unresponsive, hold release, end worker_unresponsive, render error 502',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ended moved | hold hand_over, end moved, render_moved',
    caught_up: '= | arm deadline, count resumed_live, reattach w1, arm replay',
    replay_check: '= | catch_up',
    resume_failed:
      'ended connection_lost | cancel w1 connection_lost, hold release, end connection_lost, render error 503',
    shutdown:
      'ended gateway_shutdown | cancel w1 gateway_shutdown, hold release, end gateway_shutdown, render error 503',
    answer_too_large:
      'ended answer_too_large | cancel w1 protocol_error, hold release, end answer_too_large, render error 502',
  },
  'running (detached)': {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'running | hold enqueued, count enqueued',
    enqueue_failed:
      'ended enqueue_failed | cancel w1 connection_lost, hold rollback, end enqueue_failed, render error 503',
    'reply started': 'running | disarm start_timeout, count started',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | hold hand_over, end moved, render_moved',
    'reply delta': '= | render',
    'reply tool-call': '= | render',
    'reply image': '= | render',
    'reply chat-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply image-done': 'ended job_finished | hold release, end job_finished ok, render',
    'reply error': 'ended job_finished | hold release, end job_finished, render error 502',
    protocol_error:
      'ended protocol_error | cancel w1 protocol_error, hold release, end protocol_error, render error 502',
    connection_lost:
      'ended connection_lost | cancel w1 connection_lost, hold release, end connection_lost, render error 503',
    client_gone: 'ignored',
    deadline:
      'ended deadline_exceeded | cancel w1 deadline_exceeded, hold release, end deadline_exceeded, render error 504',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired:
      'ended client_disconnected | count grace_expired, cancel w1 client_disconnected, hold release, end client_disconnected',
    worker_silent:
      'ended worker_unresponsive | log, cancel w1 worker_unresponsive, hold release, end worker_unresponsive, render error 502',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ended moved | hold hand_over, end moved, render_moved',
    caught_up: '= | arm deadline, count resumed_live, reattach w1, arm replay',
    replay_check: '= | catch_up',
    resume_failed:
      'ended connection_lost | cancel w1 connection_lost, hold release, end connection_lost, render error 503',
    shutdown:
      'ended gateway_shutdown | cancel w1 gateway_shutdown, hold release, end gateway_shutdown, render error 503',
    answer_too_large:
      'ended answer_too_large | cancel w1 protocol_error, hold release, end answer_too_large, render error 502',
  },
  stopping: {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'ignored',
    enqueue_failed: 'ignored',
    'reply started': 'ended client_disconnected | cancel w2 client_disconnected, end client_disconnected',
    'reply alive': 'ignored',
    'reply moved': 'ended moved | end moved',
    'reply delta': 'ignored',
    'reply tool-call': 'ignored',
    'reply image': 'ignored',
    'reply chat-done': 'ended job_finished | end job_finished ok',
    'reply image-done': 'ended job_finished | end job_finished ok',
    'reply error': 'ended job_finished | end job_finished',
    protocol_error: 'ignored',
    connection_lost: 'ended connection_lost | end connection_lost',
    client_gone: 'ignored',
    deadline: 'ended deadline_exceeded | end deadline_exceeded',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ended client_disconnected | end client_disconnected',
    'removed (start_timeout)': 'ended client_disconnected | end client_disconnected',
    taken_over: 'ignored',
    caught_up: 'ignored',
    replay_check: 'ignored',
    resume_failed: 'ignored',
    shutdown: 'ignored',
    answer_too_large: 'ignored',
  },
  ended: {
    start: 'ignored',
    resumed: 'ignored',
    admitted: 'ignored',
    refused: 'ignored',
    enqueued: 'ignored',
    enqueue_failed: 'ignored',
    'reply started': 'ignored',
    'reply alive': 'ignored',
    'reply moved': 'ignored',
    'reply delta': 'ignored',
    'reply tool-call': 'ignored',
    'reply image': 'ignored',
    'reply chat-done': 'ignored',
    'reply image-done': 'ignored',
    'reply error': 'ignored',
    protocol_error: 'ignored',
    connection_lost: 'ignored',
    client_gone: 'ignored',
    deadline: 'ignored',
    start_timeout: 'ignored',
    open_timer: 'ignored',
    grace_expired: 'ignored',
    worker_silent: 'ignored',
    'removed (stop)': 'ignored',
    'removed (start_timeout)': 'ignored',
    taken_over: 'ignored',
    caught_up: 'ignored',
    replay_check: 'ignored',
    resume_failed: 'ignored',
    shutdown: 'ignored',
    answer_too_large: 'ignored',
  },
};

/** Every event type and state name, listed so the compiler rejects one left out. */
const EVENT_TYPES: Record<EventType, true> = {
  start: true,
  resumed: true,
  admitted: true,
  refused: true,
  enqueued: true,
  enqueue_failed: true,
  reply: true,
  protocol_error: true,
  connection_lost: true,
  client_gone: true,
  deadline: true,
  start_timeout: true,
  open_timer: true,
  grace_expired: true,
  worker_silent: true,
  removed: true,
  taken_over: true,
  caught_up: true,
  replay_check: true,
  resume_failed: true,
  shutdown: true,
  answer_too_large: true,
};
const STATE_NAMES: Record<StateName, true> = {
  idle: true,
  resolving: true,
  enqueueing: true,
  queued: true,
  running: true,
  stopping: true,
  ended: true,
};

/** Freezes a state or event all the way down: the machine must never write to what it is given. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

const step = (state: SessionState, event: SessionEvent) => stepText(state, transition(state, event));

describe('the session machine', () => {
  const states = Object.entries(SAMPLE_STATES) as [StateKey, SessionState][];
  const events = Object.entries(SAMPLE_EVENTS) as [EventKey, SessionEvent][];

  it('samples every state name and every event type', () => {
    expect(new Set(states.map(([, state]) => state.name))).toEqual(new Set(Object.keys(STATE_NAMES)));
    expect(new Set(SAMPLED_TYPES)).toEqual(new Set(Object.keys(EVENT_TYPES)));
  });

  it('has an expectation for every cell, and no other', () => {
    expect(Object.keys(TABLE).sort()).toEqual(states.map(([key]) => key).sort());
    for (const [key] of states) {
      expect(Object.keys(TABLE[key]).sort()).toEqual(events.map(([name]) => name).sort());
    }
  });

  describe.each(states)('%s', (stateKey, state) => {
    it.each(events)('on %s', (eventKey, event) => {
      expect(step(deepFreeze(state), deepFreeze(event))).toBe(TABLE[stateKey][eventKey]);
    });
  });

  it('renders a running job’s output without a new state or a new effect list (the hot path allocates nothing)', () => {
    const running = SAMPLE_STATES['running (resumable stream, output)'];
    const a = transition(running, SAMPLE_EVENTS['reply delta']);
    const b = transition(running, SAMPLE_EVENTS['reply tool-call']);
    expect(a.next).toBeNull();
    expect(a).toBe(b);
  });

  it('starts a JSON request waiting, a stream without fallbacks opening once queued, with fallbacks at its first output', () => {
    const plan = SAMPLE_STATES.resolving.plan;
    expect(idle({ ...plan, delivery: 'background' })).toMatchObject({ name: 'idle', client: 'none' });
    const resolving = (client: 'waiting') => ({ ...SAMPLE_STATES.resolving, client });
    const withFallbacks = { ...SAMPLE_EVENTS.admitted, fallbacks: ['b'] };
    expect(step(resolving('waiting'), withFallbacks)).toBe('enqueueing | enqueue a +fallback');
    const queued = transition(
      { ...SAMPLE_STATES.enqueueing, client: 'waiting', attempt: { ...firstAttempt('a'), remaining: ['b'] } },
      SAMPLE_EVENTS.enqueued,
    );
    // The keep-alive bound opens it anyway, naming the model whose job is queued.
    expect(stepText(SAMPLE_STATES.enqueueing, queued)).toBe(
      'queued [waiting] | hold enqueued, count enqueued, arm open',
    );
    expect(step(queued.next!, SAMPLE_EVENTS.open_timer)).toBe('queued [open] | open a');
  });

  it('lets a detached stream that outlives its client run on when the resume grace ends (a background response)', () => {
    const detached = SAMPLE_STATES['running (detached)'];
    const outliving: SessionState = { ...detached, plan: { ...detached.plan, outlivesClient: true } };
    expect(step(outliving, SAMPLE_EVENTS.grace_expired)).toBe('running [gone]');
    expect(step(detached, SAMPLE_EVENTS.grace_expired)).not.toBe('running [gone]');
  });

  it('takes the model an alias names at admission: the job, the opened stream and the answer name it', () => {
    const admitted = transition(SAMPLE_STATES.resolving, { ...SAMPLE_EVENTS.admitted, model: 'm' });
    expect(stepText(SAMPLE_STATES.resolving, admitted)).toBe('enqueueing [opening] (m) | enqueue m');
    expect(step(admitted.next!, SAMPLE_EVENTS.enqueued)).toContain('open m');
  });

  it('falls back only before output, for a failure of the model, and answers the requested model’s refusal when none is left', () => {
    const refusal = GatewayError.modelUnavailable('a');
    const lastChance: SessionState = {
      ...SAMPLE_STATES['running (json, a fallback left, no output)'],
      attempt: { ...firstAttempt('b'), index: 1, refusal, switched: true },
    };
    const failed = transition(lastChance, SAMPLE_EVENTS['reply error']);
    expect(failed.effects).toContainEqual({ type: 'reject', error: refusal });
    const client: ReplyMessage = {
      requestId: 'r',
      seq: 1,
      kind: 'error',
      error: GatewayError.contextLengthExceeded(10, 20, false).toWire(),
    };
    expect(
      step(SAMPLE_STATES['running (json, a fallback left, no output)'], { type: 'reply', message: client }),
    ).toBe('ended job_finished | hold release, end job_finished, reject 400');
  });

  it("passes a worker's refusal on by its neutral path (the executor tells it in the client's words)", () => {
    const running = SAMPLE_STATES['running (json, a fallback left, no output)'];
    const refusal: ReplyMessage = {
      requestId: 'r',
      seq: 1,
      kind: 'error',
      error: GatewayError.contextLengthExceeded(10, 20, false).toWire(),
    };
    const rejected = (state: SessionState) =>
      transition(state, { type: 'reply', message: refusal }).effects.find(
        (effect) => effect.type === 'reject',
      );
    expect(rejected(running)).toMatchObject({
      error: { param: 'messages', code: 'context_length_exceeded' },
    });
  });
});
