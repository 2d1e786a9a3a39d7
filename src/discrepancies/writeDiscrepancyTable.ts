import type { Writable } from 'node:stream';
import type { DiscrepancySummary } from './discrepancyTypes.js';
import { writeChunk } from './writeChunk.js';

interface Column {
  title: string;
  value: (row: DiscrepancySummary) => string;
  max: number;
  right?: boolean;
}

const COLUMNS: Column[] = [
  { title: 'ID', value: (r) => r.id, max: 19, right: true },
  { title: 'RAISED', value: (r) => r.createdAt.toISOString().slice(0, 16).replace('T', ' '), max: 16 },
  { title: 'PARTNER', value: (r) => r.partner, max: 20 },
  { title: 'KIND', value: (r) => r.kind, max: 21 },
  { title: 'STATUS', value: (r) => r.status, max: 12 },
  { title: 'REFERENCE', value: (r) => r.reference ?? '', max: 24 },
  { title: 'AMOUNT', value: (r) => r.amountAtRisk ?? '', max: 32, right: true },
  { title: 'CUR', value: (r) => r.currency ?? '', max: 3 },
  { title: 'ASSIGNEE', value: (r) => r.assignee ?? '', max: 16 },
  { title: 'SUMMARY', value: (r) => r.summary, max: 60 },
];

/** Rows read before column widths are fixed (the rest of a long listing reuses them). */
const SAMPLE = 1000;

/**
 * Text that came from partners or people, made safe for a terminal: control characters (ANSI escape
 * sequences, carriage returns, bell) and bidirectional overrides are replaced by `?` so a partner reference
 * cannot rewrite or hide what is on the screen.
 */
export function terminalSafe(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, '?');
}

function fitCell(text: string, width: number, right = false): string {
  const cut = text.length > width ? `${text.slice(0, width - 1)}…` : text;
  return right ? cut.padStart(width) : cut.padEnd(width);
}

/**
 * Writes an aligned text table for a terminal. Widths come from the first 1000 rows (capped per column;
 * longer values end with `…`), so a listing of any length streams with flat memory. Returns the row count.
 */
export async function writeDiscrepancyTable(
  rows: AsyncIterable<DiscrepancySummary>,
  out: Writable,
  options: { onRow?: (written: number) => void } = {},
): Promise<number> {
  const write = (text: string) => writeChunk(out, text);
  const sample: string[][] = [];
  let widths: number[] | null = null;
  let written = 0;
  const line = (cells: string[], w: number[]) =>
    `${cells
      .map((cell, i) =>
        i === cells.length - 1
          ? fitCell(cell, COLUMNS[i].max).trimEnd()
          : fitCell(cell, w[i], COLUMNS[i].right),
      )
      .join('  ')}\n`;
  const flush = async () => {
    widths = COLUMNS.map((c, i) =>
      Math.min(c.max, Math.max(c.title.length, ...sample.map((cells) => cells[i].length))),
    );
    await write(
      line(
        COLUMNS.map((c) => c.title),
        widths,
      ),
    );
    for (const cells of sample) {
      await write(line(cells, widths));
      written++;
      options.onRow?.(written);
    }
    sample.length = 0;
  };
  for await (const row of rows) {
    const cells = COLUMNS.map((c) => terminalSafe(c.value(row)));
    if (widths) {
      await write(line(cells, widths));
      written++;
      options.onRow?.(written);
    } else {
      sample.push(cells);
      if (sample.length >= SAMPLE) await flush();
    }
  }
  if (!widths) {
    if (sample.length === 0) {
      await write('no discrepancies match\n');
      return 0;
    }
    await flush();
  }
  return written;
}
