import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ReconcilerConfig } from './reconcilerConfig.js';
import { resolveOwnPackageByName } from './resolveOwnPackage.js';
import { validateReconciler } from './validateReconciler.js';

/** A reconciler and the file it came from. */
export interface LoadedReconciler {
  file: string;
  config: ReconcilerConfig;
}

/** Where reconcilers live: `--reconcilers DIR`, else `RECONCILERS_DIR`, else `./reconcilers`. */
export function reconcilersDir(flag?: string): string {
  return resolve(flag ?? process.env.RECONCILERS_DIR ?? 'reconcilers');
}

/** The files a reconcilers directory may hold: TypeScript and JavaScript, ES modules and CommonJS. */
const RECONCILER_FILE = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** Declarations sit beside compiled reconcilers; they hold no reconciler. */
const DECLARATION_FILE = /\.d\.(ts|mts|cts)$/;

/**
 * Loads every `.ts .mts .cts .js .mjs .cjs` file of the directory (not declarations), validates each default
 * export whole (source included), and refuses two files for one partner. TypeScript files go through tsx,
 * so partners can be added without a build step; in every file `'intent-ledger'` resolves to the running
 * package, from wherever the directory is.
 */
export async function loadReconcilers(dir: string): Promise<LoadedReconciler[]> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    throw new Error(`cannot read the reconcilers directory ${dir}: ${(error as Error).message}`);
  }
  const files = names.filter((name) => RECONCILER_FILE.test(name) && !DECLARATION_FILE.test(name)).sort();
  const loaded: LoadedReconciler[] = [];
  for (const name of files) {
    const file = join(dir, name);
    const config = validateReconciler(await loadModule(file), file);
    const clash = loaded.find((other) => other.config.partner === config.partner);
    if (clash) throw new Error(`${file}: partner "${config.partner}" is already defined in ${clash.file}`);
    loaded.push({ file, config });
  }
  return loaded;
}

/** Finds one partner's reconciler or explains which partners exist. */
export async function loadReconciler(dir: string, partner: string): Promise<LoadedReconciler> {
  const all = await loadReconcilers(dir);
  const found = all.find((reconciler) => reconciler.config.partner === partner);
  if (!found) {
    const known = all.map((reconciler) => reconciler.config.partner).join(', ') || 'none';
    throw new Error(`no reconciler for partner "${partner}" in ${dir} (found: ${known})`);
  }
  return found;
}

/** A reconciler file's default export, whatever module system wrote it. */
async function loadModule(file: string): Promise<unknown> {
  resolveOwnPackageByName();
  if (/\.(ts|mts|cts)$/.test(file)) {
    const namespace = await (await loadTsx(file)).tsImport(pathToFileURL(file).href, __filename);
    return defaultExport(namespace as { default?: unknown });
  }
  // import() keeps what it loaded by URL (and CommonJS by file name): a file edited since, loaded again by
  // a long-lived process, must be read again, not served from the cache.
  const url = new URL(pathToFileURL(file));
  url.searchParams.set('version', String(statSync(file).mtimeMs));
  delete require.cache[file];
  const namespace: unknown = await import(url.href);
  return defaultExport(namespace as { default?: unknown });
}

/**
 * tsx (with esbuild, about 12 MB) loads TypeScript reconcilers. It is an optional peer: JavaScript
 * reconcilers and the library need nothing of it.
 */
async function loadTsx(file: string): Promise<typeof import('tsx/esm/api')> {
  try {
    return await import('tsx/esm/api');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(
      `${file}: loading a TypeScript reconciler needs the optional package tsx, which is not installed: ` +
        'install it beside intent-ledger (npm install tsx), or write the reconciler as .js, .mjs or .cjs',
      { cause: error },
    );
  }
}

/**
 * `export default` from an ES module is `namespace.default`; `module.exports = ...` from CommonJS is too.
 * CommonJS compiled from `export default` (a `.ts` or `.cts` file outside a `"type": "module"` package) is
 * `namespace.default.default`, marked `__esModule`.
 */
function defaultExport(namespace: { default?: unknown }): unknown {
  const value = namespace.default ?? namespace;
  if (typeof value === 'object' && value !== null && '__esModule' in value && 'default' in value)
    return (value as { default: unknown }).default;
  return value;
}
