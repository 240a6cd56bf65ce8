// The launcher's terminal output: every line of every child tagged with its name, in its colour.

/** Partial lines not yet written, flushed when their stream ends or when the launcher exits. */
const pendingFlushes = new Set();
let tagWidth = 0;

const useColor = (stream) => Boolean(stream.isTTY) && !process.env.NO_COLOR;

/** Sets the tag width from every name that will be printed, so the columns line up. */
export function registerTags(procs) {
  tagWidth = Math.max(tagWidth, ...procs.map((p) => p.name.length));
  // A closed stdout (`npm start | head`) must not crash the launcher and orphan the apps.
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.listenerCount('error') === 0) stream.on('error', () => {});
  }
}

export function tag(proc, stream) {
  const text = `[${proc.name.padEnd(tagWidth)}]`;
  return useColor(stream) ? `\x1b[${proc.color}m${text}\x1b[0m` : text;
}

/** A tagged writer for the launcher's own lines: `say` to stdout, `complain` to stderr. */
export function launcherVoice(launcher) {
  return {
    say: (message) => process.stdout.write(`${tag(launcher, process.stdout)} ${message}\n`),
    complain: (message) => process.stderr.write(`${tag(launcher, process.stderr)} ${message}\n`),
  };
}

/** Copies `input` to `output` line by line, each line prefixed with the process's tag. */
export function pipeLines(input, output, proc) {
  const prefix = tag(proc, output);
  let partial = '';
  const flush = () => {
    if (partial) output.write(`${prefix} ${partial}\n`);
    partial = '';
  };
  input.setEncoding('utf8'); // decodes multi-byte characters split across chunks
  input.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop();
    if (lines.length > 0)
      output.write(lines.map((line) => `${prefix} ${line.replace(/\r$/, '')}\n`).join(''));
    if (partial.length > 64 * 1024) flush(); // a child that never writes a newline must not grow this forever
  });
  input.on('end', () => {
    flush();
    pendingFlushes.delete(flush);
  });
  pendingFlushes.add(flush);
}

/** Writes out every partial line still held; for the launcher's last moments. */
export function flushPending() {
  for (const flush of pendingFlushes) flush();
}
