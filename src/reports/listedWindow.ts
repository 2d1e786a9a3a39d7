import type { ApiWindow } from './apiSourceConfig.js';

/**
 * The window a listing asks the partner for, which is exactly the window it then declares it is complete
 * for (openReportSource): the two must be one, or a row the listing rightly gives falls outside the declared
 * coverage and is rejected (Twilio's `maxRejectedRatio: 0` then fails the run), or the coverage claims
 * moments the listing never asked about, over which absence would be proven without proof.
 *
 * `iso` writes the instants as they are. `seconds` (APIs that take no fraction, such as Twilio's `DateSent`)
 * rounds both ends *down* to the whole second:
 * - the start, asked for inclusively (`DateSent>=`), then covers from that second on: a little more than
 *   the window, all of it asked for, and a message dated in the window's first second is inside it;
 * - the end is capped at the run's start anyway (coverage.ts), so rounding it up would ask, with Twilio's
 *   inclusive `DateSent<=`, for messages dated the second after the run began, which the capped coverage
 *   then rejects: the first-second failure again, at the other end. Rounded down, the coverage ends on the
 *   second asked for, whether the partner's end operator is inclusive (`<=`) or exclusive (`<`).
 */
export function listedWindow(window: ApiWindow, format: 'iso' | 'seconds'): ApiWindow {
  if (format === 'iso') return window;
  const wholeSecond = (at: Date) => new Date(Math.floor(at.getTime() / 1000) * 1000);
  return { from: wholeSecond(window.from), to: wholeSecond(window.to) };
}
