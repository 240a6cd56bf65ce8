// Runs a load generator of bench/load in a process of its own, and reads the CPU the stack's processes use
// while it measures: shared by run.mjs and the scripts that compare stacks (tracing-overhead.mjs).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cpuSeconds } from './processes.mjs';

/** Runs one load generator process; `onEvent` sees its progress events. Resolves to its result. */
export function runLoad(root, script, options, onEvent) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bench', 'load', script), JSON.stringify(options)], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let result = null;
    let stderr = '';
    let partial = '';
    child.stderr.on('data', (chunk) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
    child.stdout.on('data', (chunk) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop();
      for (const line of lines.filter(Boolean)) {
        const event = JSON.parse(line);
        if (event.event === 'result') result = event;
        else onEvent(event, child.pid);
      }
    });
    child.once('exit', (code) => {
      if (code === 0 && result) resolve(result);
      else reject(new Error(`load generator ${script} exited with ${code}:\n${stderr}`));
    });
  });
}

/** CPU seconds of every process over the measured window, as cores used (1.0 = one core busy). */
export function cpuWindow(pids) {
  const start = Object.fromEntries(Object.entries(pids).map(([label, pid]) => [label, cpuSeconds(pid)]));
  const started = performance.now();
  return () => {
    const seconds = (performance.now() - started) / 1000;
    const cores = Object.fromEntries(
      Object.entries(pids).map(([label, pid]) => {
        const end = cpuSeconds(pid);
        return [label, end === null || start[label] === null ? null : (end - start[label]) / seconds];
      }),
    );
    return { cores, seconds };
  };
}
