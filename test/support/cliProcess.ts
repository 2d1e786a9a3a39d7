import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The CLI entry point of the same build as this test. */
const CLI_MAIN = join(__dirname, '../../src/cli/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall time of the whole process, start to exit. */
  ms: number;
}

export interface CliOptions {
  /** Killed (and the promise rejected) past this. @default 60000 */
  timeoutMs?: number;
  /** Working directory. @default this process's */
  cwd?: string;
}

/**
 * `node main.js ...args` of the same build as the test, with pipes (so neither stdout nor stderr is a
 * terminal) and `env` added to this process's environment.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv, options: CliOptions = {}): Promise<CliRun> {
  return spawnCli(args, env, options).done;
}

/**
 * {@link runCli}, with the child at hand while it runs (to signal it): `done` settles as runCli's promise.
 */
export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: CliOptions = {},
): { process: ChildProcess; done: Promise<CliRun> } {
  const child = spawn(process.execPath, [CLI_MAIN, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...env },
  });
  return { process: child, done: collect(child, args, options.timeoutMs ?? 60_000) };
}

/**
 * Whether util-linux `script` is here to give a child a real pseudo-terminal. Without it, the terminal
 * tests are skipped (the drawing itself is covered with an injected stream).
 */
export const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * `node main.js ...args` on a pseudo-terminal (`script`), so stdout and stderr are both a TTY. Everything
 * the CLI wrote comes back in `stdout`, both streams merged as a terminal shows them (lines end `\r\n`).
 */
export function runCliOnTerminal(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: CliOptions = {},
): Promise<CliRun> {
  const command = [process.execPath, CLI_MAIN, ...args].map(shellQuote).join(' ');
  return collect(
    spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
      cwd: options.cwd,
      env: { ...process.env, ...env },
    }),
    args,
    options.timeoutMs ?? 60_000,
  );
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

function collect(child: ReturnType<typeof spawn>, args: string[], timeoutMs: number): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdin?.end();
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI ${args.join(' ')} still running after ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}
