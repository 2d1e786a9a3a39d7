/**
 * Runs a command to completion and measures it from outside: wall time and the peak resident set size of
 * the process. Peak RSS comes from GNU time (`/usr/bin/time -v`, the kernel's own high-water mark) when it
 * is installed, else from polling /proc/<pid>/status every 50 ms (which can miss a short spike).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface MeasuredRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  seconds: number;
  /** Peak RSS in MB; NaN when it could not be measured. */
  peakRssMb: number;
  peakRssSource: 'time -v' | '/proc polling';
  stdout: string;
  stderr: string;
}

const GNU_TIME = '/usr/bin/time';
const PEAK_LINE = /Maximum resident set size \(kbytes\): (\d+)/;

export async function measure(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<MeasuredRun> {
  const useTime = existsSync(GNU_TIME);
  const started = performance.now();
  const child = useTime
    ? spawn(GNU_TIME, ['-v', command, ...args], { env: options.env, cwd: options.cwd })
    : spawn(command, args, { env: options.env, cwd: options.cwd });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  let polledKb = 0;
  const poll = useTime
    ? undefined
    : setInterval(() => {
        try {
          const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
          const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
          if (kb > polledKb) polledKb = kb;
        } catch {
          // exited between two polls
        }
      }, 50);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]));
  });
  const seconds = (performance.now() - started) / 1000;
  if (poll) clearInterval(poll);
  let peakKb = polledKb;
  if (useTime) {
    const match = PEAK_LINE.exec(stderr);
    peakKb = match ? Number(match[1]) : Number.NaN;
    // GNU time reports the command's exit status as its own; a signal shows up as "Command terminated by signal".
    const cut = stderr.lastIndexOf('\tCommand being timed:');
    if (cut !== -1) stderr = stderr.slice(0, cut);
  }
  return {
    code,
    signal,
    seconds,
    peakRssMb: peakKb / 1024,
    peakRssSource: useTime ? 'time -v' : '/proc polling',
    stdout,
    stderr,
  };
}
