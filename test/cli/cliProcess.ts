import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The CLI entry point of the same build as this test. */
const CLI_MAIN = join(__dirname, '../../src/cli/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node main.js ...args` with pipes (so neither stdout nor stderr is a terminal), `env` added to ours. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliRun> {
  return collect(
    spawn(process.execPath, [CLI_MAIN, ...args], { env: { ...process.env, ...env } }),
    timeoutMs,
  );
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
  timeoutMs = 60_000,
): Promise<CliRun> {
  const command = [process.execPath, CLI_MAIN, ...args].map(shellQuote).join(' ');
  return collect(
    spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
      env: { ...process.env, ...env },
    }),
    timeoutMs,
  );
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

function collect(child: ReturnType<typeof spawn>, timeoutMs: number): Promise<CliRun> {
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
      reject(new Error(`CLI still running after ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
