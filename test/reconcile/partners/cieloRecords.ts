import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Cielo EDI records built from the shipped fixture's own, for tests that need a file of a few records. */

/** The shipped Cielo fixture (test/fixtures/partners/cielo/). */
export const CIELO_FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/cielo/CIELO03_1234567890_20261201_0000001.txt',
);

/** The fixture's own records, as templates: the header, a sales RO, a sale CV. */
const TEMPLATE = readFileSync(CIELO_FIXTURE, 'latin1').split('\r\n');
const HEADER = TEMPLATE[0]!;
const RO_TEMPLATE = TEMPLATE[1]!;
const CV_TEMPLATE = TEMPLATE[2]!;

/** `text` with `value` written at 1-based `start` (the spec's positions), same length. */
function put(text: string, start: number, value: string): string {
  return text.slice(0, start - 1) + value + text.slice(start - 1 + value.length);
}

/** A record 1 (RO): its Número do RO (12-18), Tipo de Transação (24-25) and Origem do ajuste (146-147). */
export function ro(number: string, tipo: string, origem = '00'): string {
  return put(put(put(RO_TEMPLATE, 12, number), 24, tipo), 146, origem);
}

/** A record 2 (CV) of RO `roNumber`. */
export function cv(options: {
  roNumber: string;
  sign: '+' | '-';
  cents: number;
  nsu: string;
  reference: string;
  date?: string;
  time?: string;
}): string {
  let text = put(CV_TEMPLATE, 12, options.roNumber);
  text = put(text, 38, options.date ?? '20261130');
  text = put(text, 46, options.sign);
  text = put(text, 47, String(options.cents).padStart(13, '0'));
  text = put(text, 73, `TID${options.nsu}`.padEnd(20, ' '));
  text = put(text, 93, options.nsu);
  text = put(text, 163, options.reference.padEnd(20, ' '));
  text = put(text, 183, options.time ?? '100012');
  return text;
}

/** A Cielo file in `dir`: the fixture's header, `details`, and a trailer counting them. */
export function cieloFile(dir: string, name: string, details: string[]): string {
  const trailer = `9${String(details.length).padStart(11, '0')}`.padEnd(250, ' ');
  const file = join(dir, name);
  writeFileSync(file, `${[HEADER, ...details, trailer].join('\r\n')}\r\n`, 'latin1');
  return file;
}
