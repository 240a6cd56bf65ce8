import { streamResumeChoice } from './stream-resume.header';

describe('streamResumeChoice', () => {
  it('lets a client ask for resume with x-stream-resume: on, decline it with off, or leave it to the catalog', () => {
    expect(streamResumeChoice({ 'x-stream-resume': 'on' })).toBe('on');
    expect(streamResumeChoice({ 'x-stream-resume': ' ON ' })).toBe('on');
    expect(streamResumeChoice({ 'x-stream-resume': 'off' })).toBe('off');
    expect(streamResumeChoice({ 'x-stream-resume': ' OFF ' })).toBe('off');
    expect(streamResumeChoice({ 'x-stream-resume': 'yes' })).toBeUndefined();
    expect(streamResumeChoice({ 'x-stream-resume': ['on', 'on'] })).toBeUndefined();
    expect(streamResumeChoice({ 'x-stream-resume': ['off', 'off'] })).toBeUndefined();
    expect(streamResumeChoice({})).toBeUndefined();
  });
});
