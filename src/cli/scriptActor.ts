import { userInfo } from 'node:os';

/**
 * What the history records for a CLI decision: `script:<by> (os user <login>)`. `--by` is typed, not
 * authenticated, so it is recorded as a script's word, with the operating-system user that ran it, and never
 * looks like a person who signed in to the review site.
 */
export function scriptActor(by: string): string {
  let login: string;
  try {
    login = userInfo().username;
  } catch {
    login = 'unknown';
  }
  return `script:${by.trim()} (os user ${login})`;
}
