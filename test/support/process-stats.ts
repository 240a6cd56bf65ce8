import { readdir, readFile } from 'node:fs/promises';

/** Resident memory of a process, from /proc (Linux). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Open file descriptors (sockets included) of a process, from /proc (Linux). */
export async function openFds(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}
