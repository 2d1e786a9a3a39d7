import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { log } from './support.js';

/**
 * Writes bench/RESULTS.md and formats it with the repository's biome, as CI's `biome ci` checks it: the
 * renderer writes its tables unpadded, and an unformatted RESULTS.md fails CI. Without biome (a checkout
 * without its dev dependencies) the file is written as rendered, and the log says to format it.
 */
export function writeResults(file: string, markdown: string): void {
  writeFileSync(file, markdown);
  const biome = join(__dirname, '../../node_modules/@biomejs/biome/bin/biome');
  if (!existsSync(biome)) {
    log(`biome not installed: run \`npx biome format --write ${file}\` before committing it`);
    return;
  }
  const formatted = spawnSync(process.execPath, [biome, 'format', '--write', file], { encoding: 'utf8' });
  if (formatted.status !== 0) {
    log(`biome could not format ${file} (exit ${formatted.status}): ${formatted.stderr.slice(-500)}`);
  }
}
