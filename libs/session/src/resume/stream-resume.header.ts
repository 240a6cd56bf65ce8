/**
 * A client's choice about resuming its stream: `on` keeps its job running for the resume grace when it
 * leaves, `off` has it cancelled at once (the console's Stop); absent (or anything else), the model's
 * catalog default (`streamResume`) decides, and without one the stream is not resumable.
 */
export const STREAM_RESUME_HEADER = 'x-stream-resume';

/** The request's `x-stream-resume` choice, or undefined to leave it to the model's catalog default. */
export function streamResumeChoice(
  headers: Record<string, string | string[] | undefined>,
): 'on' | 'off' | undefined {
  const value = headers[STREAM_RESUME_HEADER];
  if (typeof value !== 'string') return undefined;
  const choice = value.trim().toLowerCase();
  return choice === 'on' || choice === 'off' ? choice : undefined;
}
