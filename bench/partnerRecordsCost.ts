/**
 * What storing every partner row costs PostgreSQL, and which part of it: a bulk `INSERT ... SELECT` of new
 * rows like storePartnerRecords' (which also brings its own ids and leaves out rows already known), into
 * copies of `partner_records`: with the foreign keys to reconciliation_runs and intents that migration 0003
 * replaced by per-report checks, as it is now (its three indexes, no foreign keys), with a hash index on the
 * identity in place of the unique (partner, identity) btree (docs/PERFORMANCE.md, "Identity in a hash
 * index, measured and left"), each of those two again with the same identities in random order (as random
 * partner references arrive), and with only the primary key and the unique identity. A foreign key is
 * checked by a row-level trigger that runs one query per inserted row; indexes are maintained per row
 * too. Two more bound what storing less could gain (issue #15: no invariant needs every column of every
 * row): a narrow row holding only what a re-run must recognise and what later evidence reads (identity,
 * run, line, intent, amount, currency) with the same three indexes, and the full row with no index at all,
 * the heap's write alone. Run on the benchmark's own database after the measured run (tables are dropped
 * afterwards).
 */
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { round } from './support.js';

export interface PartnerRecordsCost {
  rows: number;
  variants: { name: string; seconds: number; microsPerRow: number }[];
}

const COLUMNS =
  'partner, identity, run_id, line, reference, partner_reference, amount, currency, executed_at, intent_id';
const VALUES = `'acme-pay', identity, $1, line, reference, partner_reference, amount, currency, executed_at, intent_id`;
const NARROW_COLUMNS = 'partner, identity, run_id, line, amount, currency, intent_id';
const NARROW_VALUES = `'acme-pay', identity, $1, line, amount, currency, intent_id`;

/** One copy of the table: how it is made, what is inserted into it, and from which source table. */
interface CostVariant {
  name: string;
  setup: string[];
  columns?: string;
  values?: string;
  /** `bench_pr_source` (references counting up) unless told. */
  source?: string;
}

export async function partnerRecordsCost(url: string, rows: number): Promise<PartnerRecordsCost> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: run } = await client.query<{ id: string }>(
      `INSERT INTO reconciliation_runs (partner, trigger, source, status)
       VALUES ('bench-cost', 'manual', 'bench', 'succeeded') RETURNING id`,
    );
    const { rows: first } = await client.query<{ id: string }>('SELECT min(id)::text AS id FROM intents');
    await client.query(
      `CREATE TABLE bench_pr_source AS
         SELECT g AS line, 'N' || lpad(g::text, 9, '0') || '#1' AS identity, 'order-' || g AS reference,
                'N' || lpad(g::text, 9, '0') AS partner_reference, 12.34::numeric AS amount, 'BRL'::text AS currency,
                now() AS executed_at, CASE WHEN g % 40 <> 0 THEN $2::bigint + g - 1 END AS intent_id
           FROM generate_series(1, $1::int) AS g`,
      [rows, first[0].id],
    );
    // The same rows with the same identities, dealt out in random order (as Stripe's or PayPal's random
    // references arrive): only where each identity lands in an index differs. The lines, record ids and
    // intent ids keep their order, as they do in a report whatever its references.
    await client.query(
      `CREATE TABLE bench_pr_random AS
         SELECT s.line, d.identity, s.reference, d.partner_reference, s.amount, s.currency, s.executed_at,
                s.intent_id
           FROM bench_pr_source s
           JOIN (SELECT identity, partner_reference, row_number() OVER (ORDER BY md5(line::text)) AS line
                   FROM bench_pr_source) d ON d.line = s.line
          ORDER BY s.line`,
    );
    await client.query('VACUUM ANALYZE bench_pr_source');
    await client.query('VACUUM ANALYZE bench_pr_random');
    const hashedIdentity = (table: string) => [
      `CREATE TABLE ${table} (LIKE partner_records INCLUDING DEFAULTS INCLUDING IDENTITY)`,
      `ALTER TABLE ${table} ADD PRIMARY KEY (id)`,
      `CREATE INDEX ON ${table} USING hash (identity)`,
      `CREATE INDEX ON ${table} (intent_id) WHERE intent_id IS NOT NULL`,
    ];
    const variants: CostVariant[] = [
      {
        name: 'with the foreign keys of 0002 (2 foreign keys, 3 indexes)',
        setup: [
          'CREATE TABLE bench_pr_full (LIKE partner_records INCLUDING ALL)',
          'ALTER TABLE bench_pr_full ADD FOREIGN KEY (run_id) REFERENCES reconciliation_runs (id)',
          'ALTER TABLE bench_pr_full ADD FOREIGN KEY (intent_id) REFERENCES intents (id) ON DELETE SET NULL',
        ],
      },
      {
        name: 'as in the schema (no foreign keys, 3 indexes)',
        setup: ['CREATE TABLE bench_pr_nofk (LIKE partner_records INCLUDING ALL)'],
      },
      {
        name: 'a hash index on the identity in place of the unique btree',
        setup: hashedIdentity('bench_pr_hash'),
      },
      {
        name: 'the same identities in random order: as in the schema',
        setup: ['CREATE TABLE bench_pr_random_nofk (LIKE partner_records INCLUDING ALL)'],
        source: 'bench_pr_random',
      },
      {
        name: 'the same identities in random order: a hash index in place of the unique btree',
        setup: hashedIdentity('bench_pr_random_hash'),
        source: 'bench_pr_random',
      },
      {
        name: 'primary key + unique identity only',
        setup: [
          'CREATE TABLE bench_pr_lean (LIKE partner_records INCLUDING DEFAULTS INCLUDING IDENTITY)',
          'ALTER TABLE bench_pr_lean ADD PRIMARY KEY (id), ADD UNIQUE (partner, identity)',
        ],
      },
      {
        name: 'narrow rows (identity, run, line, intent, amount, currency), 3 indexes',
        setup: [
          `CREATE TABLE bench_pr_narrow (
             id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, partner text NOT NULL, identity text NOT NULL,
             run_id bigint NOT NULL, line integer NOT NULL, amount numeric, currency text, intent_id bigint,
             UNIQUE (partner, identity))`,
          'CREATE INDEX ON bench_pr_narrow (intent_id) WHERE intent_id IS NOT NULL',
        ],
        columns: NARROW_COLUMNS,
        values: NARROW_VALUES,
      },
      {
        name: 'as in the schema without any index (the heap alone)',
        setup: ['CREATE TABLE bench_pr_heap (LIKE partner_records INCLUDING DEFAULTS INCLUDING IDENTITY)'],
      },
    ];
    const out: PartnerRecordsCost['variants'] = [];
    for (const variant of variants) {
      for (const statement of variant.setup) await client.query(statement);
      const table = /CREATE TABLE (\w+)/.exec(variant.setup[0])![1];
      await client.query('CHECKPOINT');
      const started = performance.now();
      await client.query(
        `INSERT INTO ${table} (${variant.columns ?? COLUMNS}) SELECT ${variant.values ?? VALUES} FROM ${variant.source ?? 'bench_pr_source'}`,
        [run[0].id],
      );
      const seconds = (performance.now() - started) / 1000;
      out.push({
        name: variant.name,
        seconds: round(seconds, 2),
        microsPerRow: round((seconds * 1e6) / rows, 1),
      });
      await client.query(`DROP TABLE ${table}`);
    }
    await client.query('DROP TABLE bench_pr_source, bench_pr_random');
    return { rows, variants: out };
  } finally {
    await client.end();
  }
}
