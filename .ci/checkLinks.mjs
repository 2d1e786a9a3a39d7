#!/usr/bin/env node
/**
 * Link check for the repository's own Markdown: README.md, CHANGELOG.md and every docs/**.md. The repository
 * must explain itself, so every relative link has to point at a file or folder inside it that exists, and
 * an anchor (`file.md#heading`, `#heading`) at a heading of that file. http(s) and mailto links are not
 * fetched (CI stays offline); any other scheme is refused. Links inside code (fenced blocks, `spans`) are
 * not links.
 *
 * Usage: node .ci/checkLinks.mjs [file.md ...]   (no arguments: the files above)
 * Exit 0 when every link is good; 1 with one `file:line: link "target": reason` per bad link.
 * Dependency-free on purpose: it runs before anything is built.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The Markdown files checked by default, relative to the repository root. */
function defaultFiles() {
  const files = ['README.md', 'CHANGELOG.md'].filter((file) => existsSync(join(root, file)));
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk('docs');
  return files;
}

/**
 * Every link of a Markdown text with its line: inline links and images `[text](target "title")`, and
 * reference definitions `[label]: target`. Fenced code blocks and code spans are skipped.
 */
function findLinks(text) {
  const links = [];
  let fence = null;
  text.split('\n').forEach((rawLine, index) => {
    const line = index + 1;
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(rawLine);
    if (fence) {
      if (fenceMatch && fenceMatch[1][0] === fence[0] && fenceMatch[1].length >= fence.length) fence = null;
      return;
    }
    if (fenceMatch) {
      fence = fenceMatch[1];
      return;
    }
    const withoutCode = rawLine.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length));
    const definition = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(withoutCode);
    if (definition) links.push({ line, target: unbracket(definition[1]) });
    const inline = /!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g;
    for (const match of withoutCode.matchAll(inline)) links.push({ line, target: unbracket(match[1]) });
  });
  return links;
}

function unbracket(target) {
  return target.startsWith('<') && target.endsWith('>') ? target.slice(1, -1) : target;
}

/** The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped, spaces as `-`. */
function headingAnchors(text) {
  const anchors = new Set();
  const seen = new Map();
  let fence = null;
  for (const rawLine of text.split('\n')) {
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(rawLine);
    if (fence) {
      if (fenceMatch && fenceMatch[1][0] === fence[0] && fenceMatch[1].length >= fence.length) fence = null;
      continue;
    }
    if (fenceMatch) {
      fence = fenceMatch[1];
      continue;
    }
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(rawLine);
    if (!heading) continue;
    const plain = heading[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*_~]/g, (char) => (char === '_' ? '_' : ''))
      .replace(/<[^>]+>/g, '');
    const slug = plain
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Why `target`, found in `file` (relative to the root), is a bad link; undefined when it is good. */
function problemWith(file, target) {
  if (target === '') return 'empty link';
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(target);
  if (scheme) {
    return ['http', 'https', 'mailto'].includes(scheme[1].toLowerCase())
      ? undefined
      : `the ${scheme[1]}: scheme is not allowed (link to a file of the repository or an http(s) page)`;
  }
  if (target.startsWith('//')) return 'a protocol-relative address (write https://)';
  const hashAt = target.indexOf('#');
  const pathPart = hashAt === -1 ? target : target.slice(0, hashAt);
  const anchor = hashAt === -1 ? undefined : target.slice(hashAt + 1);
  let decoded;
  try {
    decoded = decodeURIComponent(pathPart.split('?')[0]);
  } catch {
    return 'not a valid address';
  }
  // GitHub reads `/path` from the repository root; anything else is relative to the file.
  const absolute = decoded.startsWith('/')
    ? join(root, decoded)
    : resolve(join(root, dirname(file)), decoded || file.slice(dirname(file).length + 1));
  const inside = relative(root, absolute);
  if (inside.startsWith('..') || isAbsolute(inside)) return 'leaves the repository';
  if (!existsSync(absolute)) return `${inside || '.'} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(absolute).isDirectory() || !absolute.endsWith('.md')) return undefined;
  const anchors = headingAnchors(readFileSync(absolute, 'utf8'));
  return anchors.has(decodeURIComponent(anchor).toLowerCase())
    ? undefined
    : `${inside} has no heading for #${anchor}`;
}

function main() {
  const files = process.argv.length > 2 ? process.argv.slice(2) : defaultFiles();
  const problems = [];
  let checked = 0;
  for (const given of files) {
    const file = relative(root, resolve(given));
    if (file.startsWith('..')) {
      problems.push(`${given}: outside the repository, not checked`);
      continue;
    }
    for (const { line, target } of findLinks(readFileSync(join(root, file), 'utf8'))) {
      checked += 1;
      const problem = problemWith(file, target);
      if (problem) problems.push(`${file}:${line}: link "${target}": ${problem}`);
    }
  }
  if (problems.length > 0) {
    for (const problem of problems) console.error(problem);
    console.error(`link check: ${problems.length} bad link(s) of ${checked} in ${files.length} file(s)`);
    process.exit(1);
  }
  console.log(`link check: ${checked} link(s) in ${files.length} file(s), all inside the repository`);
}

main();
