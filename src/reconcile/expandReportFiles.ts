import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { compareFileNames } from './naturalFileOrder.js';

const GLOB_CHARS = /[*?[{]/;

/**
 * The report files a CSV source's `path` names, in natural name order (compareFileNames: batch_9 before
 * batch_10). A path without glob characters is returned
 * as is (a missing file then fails its run with the reader's error, rather than silently doing nothing).
 *
 * Supports `*` and `?` within a path segment, `[abc]` classes, `{a,b}` alternatives and `**` for any
 * number of directories; hidden entries match only a pattern that starts with a dot. Node 20 has no
 * `fs.globSync`, and a dozen lines here beat depending on a package we do not declare.
 */
export async function expandReportFiles(pattern: string): Promise<string[]> {
  if (!GLOB_CHARS.test(pattern)) return [pattern];
  const absolute = pattern.startsWith('/');
  const segments = pattern.split('/').filter((segment, index) => segment !== '' || index === 0);
  const fixed: string[] = [];
  while (segments.length > 0 && !GLOB_CHARS.test(segments[0])) fixed.push(segments.shift()!);
  const base = absolute ? `/${fixed.filter(Boolean).join('/')}` : fixed.join('/') || '.';
  const prefix = fixed.length > 0 ? (absolute ? base : fixed.join('/')) : '';
  const found: string[] = [];
  await walk(base, prefix, segments.map(toMatcher), found);
  return [...new Set(found)].sort(compareFileNames);
}

type Matcher = '**' | RegExp;

async function walk(dir: string, shown: string, matchers: Matcher[], found: string[]): Promise<void> {
  const [head, ...rest] = matchers;
  if (head === undefined) return;
  if (head === '**') {
    // Zero directories, then one more directory and `**` again.
    await walk(dir, shown, rest, found);
    for (const entry of await entries(dir)) {
      if (entry.isDirectory() && !entry.name.startsWith('.')) {
        await walk(join(dir, entry.name), joinShown(shown, entry.name), matchers, found);
      }
    }
    return;
  }
  for (const entry of await entries(dir)) {
    if (!head.test(entry.name)) continue;
    const path = joinShown(shown, entry.name);
    if (rest.length === 0) {
      if (entry.isFile()) found.push(path);
    } else if (entry.isDirectory()) {
      await walk(join(dir, entry.name), path, rest, found);
    }
  }
}

async function entries(dir: string) {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code === 'ENOENT' ||
      (error as NodeJS.ErrnoException).code === 'ENOTDIR'
    ) {
      return [];
    }
    throw error;
  }
}

function joinShown(shown: string, name: string): string {
  if (shown === '') return name;
  return shown.endsWith('/') ? `${shown}${name}` : `${shown}/${name}`;
}

/** One path segment of a glob as an anchored regular expression. */
function toMatcher(segment: string): Matcher {
  if (segment === '**') return '**';
  let source = '';
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i];
    if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else if (char === '[') {
      const end = segment.indexOf(']', i + 1);
      if (end === -1) {
        source += '\\[';
        continue;
      }
      const body = segment
        .slice(i + 1, end)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\');
      source += `[${body}]`;
      i = end;
    } else if (char === '{') {
      const end = segment.indexOf('}', i + 1);
      if (end === -1) {
        source += '\\{';
        continue;
      }
      const options = segment
        .slice(i + 1, end)
        .split(',')
        .map(escapeRegExp);
      source += `(?:${options.join('|')})`;
      i = end;
    } else source += escapeRegExp(char);
  }
  const hiddenGuard = segment.startsWith('.') ? '' : '(?!\\.)';
  return new RegExp(`^${hiddenGuard}${source}$`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
