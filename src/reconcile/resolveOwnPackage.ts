import Module, { register } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The name partners' reconciler files import: `import { defineReconciler } from 'intent-ledger'`. */
const PACKAGE_NAME = 'intent-ledger';
/** This package's entry point, the one running now (dist/src/index.js). */
const ENTRY = join(__dirname, '..', 'index.js');

/**
 * ESM resolve hook (Node's module customization hooks run it on their own thread): `'intent-ledger'` is
 * the running package's entry point, wherever the importing file is.
 */
const ESM_HOOKS = `
let entry;
export function initialize(data) { entry = data.entry; }
export async function resolve(specifier, context, next) {
  if (specifier === ${JSON.stringify(PACKAGE_NAME)}) return { url: entry, format: 'commonjs', shortCircuit: true };
  return next(specifier, context);
}`;

let installed = false;

/**
 * Makes `'intent-ledger'` resolve to the running package from any directory, for `import` (an ESM resolve
 * hook, `module.register`, Node >= 20.6) and for `require` (CommonJS resolution). Without it a reconcilers
 * folder outside a project that installed the package (`/etc/intent-ledger/reconcilers`) cannot import
 * `defineReconciler`, and one inside such a project would get a second copy instead of the one running.
 * Only that exact name is mapped; everything else resolves as Node does.
 */
export function resolveOwnPackageByName(): void {
  if (installed) return;
  installed = true;
  register(`data:text/javascript,${encodeURIComponent(ESM_HOOKS)}`, {
    parentURL: pathToFileURL(__filename),
    data: { entry: pathToFileURL(ENTRY).href },
  });
  const internals = Module as unknown as {
    _resolveFilename: (request: string, ...rest: unknown[]) => string;
  };
  const resolveFilename = internals._resolveFilename;
  internals._resolveFilename = function (request: string, ...rest: unknown[]): string {
    if (request === PACKAGE_NAME) return ENTRY;
    return resolveFilename.call(this, request, ...rest);
  };
}
