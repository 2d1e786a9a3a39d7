/** Display formatting for the review pages: UTC times, ages, labels (amounts: src/shared/formatAmount.ts). */

/** `2025-03-04 13:05 UTC` (without the zone where a column header says UTC). */
export function formatInstant(date: Date | null | undefined, withZone = true): string {
  if (!date) return '';
  const text = date.toISOString().slice(0, 16).replace('T', ' ');
  return withZone ? `${text} UTC` : text;
}

/** How long ago, coarse: `just now`, `5 min`, `3 h`, `4 d`. */
export function formatAge(date: Date, now: Date = new Date()): string {
  const seconds = Math.max(0, Math.floor((now.getTime() - date.getTime()) / 1000));
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

/** `missing_at_partner` -> `Missing at partner` */
export function humanise(code: string): string {
  const words = code.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}
