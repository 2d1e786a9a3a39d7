/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) into the two views that say what bounds a run: self time
 * per function, and self time per place (a package under node_modules, one of our files, or V8's own
 * `(garbage collector)` / `(idle)` / `(program)`). `(idle)` is the main thread waiting, which for the reconcile
 * CLI means waiting for PostgreSQL (or the disk).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** Heaviest functions by self time. */
  functions: { name: string; selfMs: number; share: number }[];
  /** Self time by package / file / V8 category. */
  places: { place: string; selfMs: number; share: number }[];
}

export function summariseProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    // timeDeltas[i] is the time before sample i; attributing it to sample i is what DevTools does.
    const delta = profile.timeDeltas[i] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + delta);
  }
  const totalUs = [...selfUs.values()].reduce((sum, value) => sum + value, 0);
  const functions = new Map<string, number>();
  const places = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const name = `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    const place = placeOf(frame);
    places.set(place, (places.get(place) ?? 0) + us);
  }
  const rank = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, us]) => ({
        key,
        ms: Math.round(us / 1000),
        share: Math.round((1000 * us) / totalUs) / 10,
      }));
  return {
    totalMs: Math.round(totalUs / 1000),
    functions: rank(functions).map(({ key, ms, share }) => ({ name: key, selfMs: ms, share })),
    places: rank(places).map(({ key, ms, share }) => ({ place: key, selfMs: ms, share })),
  };
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) return url.slice(modules + 'node_modules/'.length);
  const dist = url.search(/\/(src|bench|migrations|reconcilers)\//);
  if (dist !== -1) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

function placeOf(frame: ProfileNode['callFrame']): string {
  if (!frame.url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(frame.url);
  if (modules) return modules[1];
  if (frame.url.startsWith('node:')) return 'node core';
  const own = /\/((?:src|bench|migrations|reconcilers)\/.*)$/.exec(frame.url);
  return own ? own[1] : frame.url;
}
