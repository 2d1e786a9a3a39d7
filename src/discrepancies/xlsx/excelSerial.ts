const MS_PER_DAY = 86_400_000;
/** 1970-01-01 as an Excel serial day: days since 1899-12-30, the epoch of Excel's 1900 date system. */
const UNIX_EPOCH_SERIAL = 25_569;
/** From 1900-03-01 on, the serial count is right; before it Excel counts a 1900-02-29 that never was. */
const FIRST_EXACT = Date.UTC(1900, 2, 1);

/**
 * `instant` as an Excel date-time serial in UTC: days since 1899-12-30 00:00 UTC, the time of day as the
 * fraction (2025-03-10T12:00:00Z is 45726.5). From 1900-03-01 on only (every instant this product
 * stores), where Excel's fictitious 1900-02-29 no longer shifts the count; earlier ones throw. A double
 * holds the millisecond at today's serials (about 1e-11 days of resolution).
 */
export function excelSerial(instant: Date): number {
  const time = instant.getTime();
  if (Number.isNaN(time)) throw new RangeError('an invalid Date has no Excel serial');
  if (time < FIRST_EXACT)
    throw new RangeError(`${instant.toISOString()} is before 1900-03-01: no exact Excel serial`);
  return time / MS_PER_DAY + UNIX_EPOCH_SERIAL;
}
