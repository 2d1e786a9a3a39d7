import type { MigrationInterface, QueryRunner } from 'typeorm';

const KINDS_BEFORE = [
  'duplicate_execution',
  'amount_mismatch',
  'currency_mismatch',
  'missing_at_partner',
  'orphan_partner_record',
  'unresolved',
  'late_completion',
];

/**
 * What a partner record's identity is made of from 0007 on (see src/reconcile/identifyRows.ts, which must
 * build the same text): `<partner reference>|<reference>`, or `ref:<reference>|<executed at, UTC>`.
 */
const IDENTITY_BASE = `COALESCE(partner_reference || '|' || COALESCE(reference, ''),
         'ref:' || COALESCE(reference, '') || '|' ||
         COALESCE(to_char(executed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), ''))`;

/** Before 0007: the partner reference alone, or `ref:<reference>|<amount>|<executed at>`. */
const OLD_IDENTITY_BASE = `COALESCE(partner_reference,
         'ref:' || COALESCE(reference, '') || '|' || COALESCE(trim_scale(amount)::text, '') || '|' ||
         COALESCE(to_char(executed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), ''))`;

/**
 * 0007: the `ambiguous_match` discrepancy, a run's warnings, and partner records identified without their
 * amount but with our reference.
 *
 * A partner row that could be the execution of more than one intent (two intents with one reference, two
 * amount-matched intents close in time) is no longer given to one of them by a tie-break: the run resolves
 * none of them from it, proves none of them absent, and raises one `ambiguous_match` naming every candidate,
 * for a person to decide. The kind joins the CHECK constraint; down() fails while such discrepancies exist
 * (the old constraint cannot be added back) rather than deleting what finance may be working through.
 *
 * `reconciliation_runs.warnings` keeps why a run proved less than it could (no declared coverage, a report
 * that does not look like the partner's), so the run card says it after the command's output is gone.
 *
 * Identities: a record was known by its partner reference alone, so an NSU the partner reuses another day for
 * another order was taken for the first order's (an invented mismatch, the second order never found), and,
 * without partner references, by reference, amount and time, so a partner's corrected amount looked like a
 * second execution (an invented duplicate). Each stored record's identity is rewritten in the new form,
 * occurrences numbered again in id order (the order they were stored in), and the discrepancies whose dedupe
 * key carries a record's identity (orphans, mismatches) follow, so re-running an old report after the upgrade
 * still finds everything it raised. One pass over partner_records; down() puts the old identities back the
 * same way.
 */
export class AmbiguousMatch1000000000007 implements MigrationInterface {
  name = 'AmbiguousMatch1000000000007';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_kind_check');
    await queryRunner.query(
      `ALTER TABLE discrepancies ADD CONSTRAINT discrepancies_kind_check
         CHECK (kind IN (${[...KINDS_BEFORE, 'ambiguous_match'].map((kind) => `'${kind}'`).join(', ')}))`,
    );
    await queryRunner.query(
      `ALTER TABLE reconciliation_runs ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]'`,
    );
    await reidentify(queryRunner, IDENTITY_BASE);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await reidentify(queryRunner, OLD_IDENTITY_BASE);
    await queryRunner.query('ALTER TABLE reconciliation_runs DROP COLUMN warnings');
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_kind_check');
    await queryRunner.query(
      `ALTER TABLE discrepancies ADD CONSTRAINT discrepancies_kind_check
         CHECK (kind IN (${KINDS_BEFORE.map((kind) => `'${kind}'`).join(', ')}))`,
    );
  }
}

/**
 * Rewrites every partner record's identity as `base` plus its occurrence (`#n`, in id order within the
 * partner and base), then the dedupe keys that embed a record's identity. Through a temp table of (id, old,
 * new); the unique (partner, identity) index is checked row by row, so every changed identity is first moved
 * aside under a prefix no identity has.
 */
async function reidentify(queryRunner: QueryRunner, base: string): Promise<void> {
  await queryRunner.query(
    `CREATE TEMP TABLE reidentified AS
     SELECT id, partner, identity AS old_identity,
            base || '#' || row_number() OVER (PARTITION BY partner, base ORDER BY id) AS new_identity
       FROM (SELECT id, partner, identity, ${base} AS base FROM partner_records) b`,
  );
  await queryRunner.query('DELETE FROM reidentified WHERE old_identity = new_identity');
  await queryRunner.query(
    `UPDATE partner_records pr SET identity = chr(1) || r.new_identity FROM reidentified r WHERE r.id = pr.id`,
  );
  await queryRunner.query(
    'UPDATE partner_records pr SET identity = r.new_identity FROM reidentified r WHERE r.id = pr.id',
  );
  await queryRunner.query(
    `UPDATE discrepancies d
        SET dedupe_key = left(d.dedupe_key, length(d.dedupe_key) - length(r.old_identity)) || r.new_identity
       FROM reidentified r
      WHERE d.kind IN ('amount_mismatch', 'currency_mismatch', 'orphan_partner_record')
        AND r.id = d.partner_record_ids[1]
        AND right(d.dedupe_key, length(r.old_identity) + 1) = ':' || r.old_identity`,
  );
  await queryRunner.query('DROP TABLE reidentified');
}
