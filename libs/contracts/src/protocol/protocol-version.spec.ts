import { CHAT_MODEL_TYPE } from '../model-types';
import { readModelList, readModelLookup, registryAnswer } from '../registry/registry-answers.reader';
import { encodeControlMessage, parseControlMessage } from './control-message';
import { encodeKeyInvalidation, readKeyInvalidation } from './key-invalidation';
import { PROTOCOL_VERSIONS, protocolVersionOf, ProtocolVersionError } from './protocol-version';
import { ProtocolError } from './protocol.error';
import { parseReplyRecord } from './reply-message.parser';
import { encodeUpstreamEvent, readUpstreamEvent } from './upstream-event';

describe('protocolVersionOf', () => {
  it('reads an absent version as 1 and accepts every version up to its own', () => {
    expect(protocolVersionOf('reply', undefined)).toBe(1);
    expect(protocolVersionOf('reply', PROTOCOL_VERSIONS.reply)).toBe(PROTOCOL_VERSIONS.reply);
  });

  it('refuses a newer version, naming it and the family', () => {
    const newer = PROTOCOL_VERSIONS.job + 1;
    const error = new ProtocolVersionError('job', newer);
    expect(() => protocolVersionOf('job', newer)).toThrow(error.message);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error.message).toBe(
      `job of protocol version ${newer} refused: this process reads versions 1 to ${PROTOCOL_VERSIONS.job}`,
    );
  });

  it.each([0, -1, 1.5, '1', null, {}])('refuses %p, which is no version', (v) => {
    expect(() => protocolVersionOf('control', v)).toThrow(
      `control message refused: 'v' must be a protocol version from 1 to 1, got ${JSON.stringify(v)}`,
    );
  });
});

describe('versioned messages as this release writes and reads them', () => {
  const requestId = 'req_0123456789abcdef';

  it('reply messages: the version is checked, not kept', () => {
    expect(parseReplyRecord({ v: 1, requestId, seq: 0, kind: 'alive', x: 1 })).toEqual({
      requestId,
      seq: 0,
      kind: 'alive',
    });
    expect(() =>
      parseReplyRecord({ v: PROTOCOL_VERSIONS.reply + 1, requestId, seq: 0, kind: 'alive' }),
    ).toThrow(ProtocolVersionError);
  });

  it('control messages carry their version', () => {
    const encoded = encodeControlMessage({ requestId, reason: 'deadline_exceeded' });
    expect(JSON.parse(encoded)).toEqual({ v: 1, requestId, reason: 'deadline_exceeded' });
    expect(parseControlMessage(encoded)).toEqual({ requestId, reason: 'deadline_exceeded' });
  });

  it('key invalidations are the bare hash at version 1; a later version adds fields after a bar', () => {
    const hash = 'f'.repeat(64);
    expect(encodeKeyInvalidation(hash)).toBe(hash);
    expect(readKeyInvalidation(`${hash}|1|more|fields`)).toBe(hash);
    expect(() => readKeyInvalidation(`${hash}|2`)).toThrow(ProtocolVersionError);
    expect(() => readKeyInvalidation('not-a-hash')).toThrow('Malformed key invalidation: not a key hash');
  });

  it('upstream events: version after the sender, which releases before read as part of the sender', () => {
    const out = encodeUpstreamEvent({ kind: 'out', upstream: 'u1', sender: 'w-1' });
    expect(out).toBe('out|u1|w-1|1');
    // What a release before versions matched: the sender is all that follows the upstream.
    expect(/^(free|up|out)\|([^|]{1,128})(?:\|(.{1,128}))?$/.exec(out)?.[3]).toBe('w-1|1');
    expect(readUpstreamEvent(out)).toEqual({ kind: 'out', upstream: 'u1', sender: 'w-1' });
    expect(readUpstreamEvent(encodeUpstreamEvent({ kind: 'free', upstream: 'u1' }))).toEqual({
      kind: 'free',
      upstream: 'u1',
    });
    // A release's sender, which a reader of the version before skips (it reads a release's upstream only).
    const free = encodeUpstreamEvent({ kind: 'free', upstream: 'u1', sender: 'w-1' });
    expect(free).toBe('free|u1|w-1|1');
    expect(readUpstreamEvent(free)).toEqual({ kind: 'free', upstream: 'u1', sender: 'w-1' });
    expect(() => readUpstreamEvent(`free|u1|${'w'.repeat(129)}|1`)).toThrow('the sender must be at most');
    expect(readUpstreamEvent('up|u1|w-2')).toEqual({ kind: 'up', upstream: 'u1', sender: 'w-2' });
    expect(() => readUpstreamEvent('up|u1')).toThrow('Malformed upstream event: the sender');
    expect(() => readUpstreamEvent('gone|u1|w-2')).toThrow('Malformed upstream event: unknown kind');
  });

  it("the registry's answers: required fields checked, a registry before readyWorkers read as all ready", () => {
    const entry = {
      id: 'm',
      type: CHAT_MODEL_TYPE,
      owned_by: 'o',
      created: 1,
      liveWorkers: 2,
      concurrency: 4,
    };
    expect(readModelList([registryAnswer(entry)])).toEqual([{ ...entry, readyWorkers: 2 }]);
    expect(readModelLookup(registryAnswer({ state: 'unknown' }))).toEqual({ state: 'unknown' });
    expect(() =>
      readModelLookup({ v: 1, state: 'live', model: { ...entry, liveWorkers: undefined } }),
    ).toThrow("Malformed registry answer: 'liveWorkers' must be a non-negative integer");
    expect(() => readModelLookup({ v: 1, state: 'gone' })).toThrow("'state' is not a known lookup state");
  });
});
