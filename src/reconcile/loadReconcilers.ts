import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ReconcilerConfig } from './reconcilerConfig.js';
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

/**
 * Loads every `.ts` and `.js` file of the directory (not `.d.ts`), validates each default export, and
 * refuses two files for one partner. TypeScript files are loaded through tsx, so partners can be added
 * without a build step.
 */
export async function loadReconcilers(dir: string): Promise<LoadedReconciler[]> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    throw new Error(`cannot read the reconcilers directory ${dir}: ${(error as Error).message}`);
  }
  const files = names.filter((name) => /\.(ts|js)$/.test(name) && !name.endsWith('.d.ts')).sort();
  const loaded: LoadedReconciler[] = [];
  for (const name of files) {
    const file = join(dir, name);
    const module = await loadModule(file);
    const config = validateReconciler(module.default ?? module, file);
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

async function loadModule(file: string): Promise<{ default?: unknown }> {
  if (file.endsWith('.ts')) {
    const { require: tsxRequire } = await import('tsx/cjs/api');
    return tsxRequire(file, __filename) as { default?: unknown };
  }
  return require(file) as { default?: unknown };
}
