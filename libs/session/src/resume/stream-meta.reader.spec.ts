import { InvalidStreamMetaError, readStreamMeta } from './stream-meta.reader';

const META = {
  keyId: `key_${'a1'.repeat(12)}`,
  protocol: 'chat.completions',
  model: 'sim-chat',
  created: 1,
  deadline: 2,
  ticketId: 'abc1',
};

describe('readStreamMeta', () => {
  it("reads a team's lease when the stream holds one, and none from a meta without it", () => {
    const teamId = `team_${'0b'.repeat(12)}`;
    expect(readStreamMeta(JSON.stringify({ ...META, teamId }))).toEqual({ ...META, teamId });
    expect(readStreamMeta(JSON.stringify(META))).toEqual(META);
  });

  it('refuses a team id that is not one', () => {
    const read = () => readStreamMeta(JSON.stringify({ ...META, teamId: 'team_1' }));
    expect(read).toThrow(InvalidStreamMetaError);
    expect(read).toThrow('teamId is not a team id');
  });

  it('reads the trace a resume links to, and drops one that is not a traceparent without refusing the meta', () => {
    const traceparent = `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`;
    expect(readStreamMeta(JSON.stringify({ ...META, traceparent }))).toEqual({ ...META, traceparent });
    expect(readStreamMeta(JSON.stringify({ ...META, traceparent: 'not-a-trace' }))).toEqual(META);
  });
});
