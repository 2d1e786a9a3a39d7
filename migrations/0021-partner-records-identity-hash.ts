import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0021: a stored partner record is found by its identity through a hash index, not the unique
 * (partner, identity) btree.
 *
 * A run looks records up by identity only with `=` (storePartnerRecords.ts `findKnownRecords`, and
 * recordOtherRows.ts), never by range or in identity order, and the btree cost every stored row a descent
 * to its place among all the identities ever stored. A partner's own references are often random
 * (Stripe's `ch_...`, PayPal's transaction ids), and Cielo's NSU starts again every day, so on a ledger
 * with history each row landed on another leaf page of an index larger than the cache a run has: a
 * 1,000,000-row run with random references stored its rows in about 8.7 s with the btree and 5.5-5.7 s with
 * this index. Identities that count up (the benchmark's NSUs on an empty ledger) are the btree's best case:
 * there the two measured the same within the noise in whole runs, and up to 0.9 s per million rows apart
 * in bare copies of the table (docs/PERFORMANCE.md, "Identity in a hash index (stop 27)"). A hash index
 * keeps a 4-byte hash code per row and rechecks the row it finds, so a lookup is exact whatever collides.
 *
 * What the unique constraint guaranteed, kept: one record per (partner, identity). A run stores only the
 * rows it did not find stored (`rec_known`, read under the partner's reconciliation lock, which every
 * run of that partner holds until it commits: src/reconcile/sql/lockPartnerReconciliation.ts), and numbers
 * the repeats of one identity within a report (`#<n>`, identifyRows.ts), so nothing inserts an identity
 * twice. recordOtherRows.ts inserted with `ON CONFLICT (partner, identity) DO NOTHING`, which needs the
 * unique index; it now leaves out what is stored with the same lookup. Were a duplicate stored anyway, a
 * later run would count one execution twice and flag a duplicate execution for a person to look at: never
 * prove an intent not executed.
 *
 * Hash indexes are WAL-logged and crash-safe since PostgreSQL 10. The index is built before the constraint
 * is dropped: building it takes a lock that lets `partner_records` be read meanwhile, and only dropping the
 * constraint, the last step, locks the table out of reads too (until the migrations commit). A worker of an
 * earlier version still running against the upgraded schema fails every run (its `ON CONFLICT` finds no
 * unique index; the run applies nothing), and refuses to start again (src/database/schemaGuard.ts).
 */
export class PartnerRecordsIdentityHash1000000000021 implements MigrationInterface {
  name = 'PartnerRecordsIdentityHash1000000000021';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE INDEX partner_records_identity ON partner_records USING hash (identity)');
    await queryRunner.query('ALTER TABLE partner_records DROP CONSTRAINT partner_records_identity_unique');
  }

  /** Fails, changing nothing, if some identity was stored twice meanwhile: find out how before going back. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE partner_records ADD CONSTRAINT partner_records_identity_unique UNIQUE (partner, identity)',
    );
    await queryRunner.query('DROP INDEX partner_records_identity');
  }
}
