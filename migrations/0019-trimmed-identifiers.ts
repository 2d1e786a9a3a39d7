import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What `String.prototype.trim` removes, as src/shared/identifierText.ts lists it (`TRIM_CHARACTERS`); copied,
 * since a migration must keep doing what it did when it shipped. No quote or backslash: a plain SQL literal.
 */
const TRIM = `'\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff'`;

/** The identity base of src/reconcile/identifyRows.ts (IDENTITY_BASE), over the trimmed values. */
const BASE = `COALESCE(new_partner_reference || '|' || COALESCE(new_reference, ''),
         'ref:' || COALESCE(new_reference, '') || '|' ||
         COALESCE(to_char(executed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), ''))`;

/**
 * 0019: partner records' identifiers trimmed, as reports are read from now on (src/shared/identifierText.ts).
 *
 * Until now a quoted CSV value kept its blanks (`"1AB0001 "`), so a record could be stored with an identifier,
 * and an identity, that the same file no longer yields. Not only orphans: a padded partner reference on a row
 * matched by our reference (or the other way round) was an execution of an intent, and a re-run of that old
 * file would now find no record under the trimmed identity, store the row again, and count the execution
 * twice. So every record whose reference or partner reference has edge whitespace (or is blank) gets the
 * trimmed values (blank is NULL, "no reference") and the identity the file now yields.
 *
 * An identity's occurrence (`#n`) counts the rows of one file with that base, in line order. Rows whose old
 * bases now coincide are numbered together again, per run (the run that stored them read that file): a row's
 * new number is its old one plus, for each other old base of the same new base, the highest number stored by
 * that run before its line. That is the file's own numbering when the run stored every such row of its file
 * (the usual case: a file's first reading stores all of it). Rows of the same new base that were not padded
 * are renumbered with them. A new identity another record already holds is not taken: that record keeps its
 * old identity (a re-run of its file then finds the other record under the new one, which is what the
 * current reading would have stored), as do records whose renumbering collides; their values are trimmed
 * all the same. Dedupe keys carrying a rewritten identity follow, as in 0007.
 *
 * Irreversible: the blanks are not kept, so down() changes nothing.
 */
export class TrimmedIdentifiers1000000000019 implements MigrationInterface {
  name = 'TrimmedIdentifiers1000000000019';

  async up(queryRunner: QueryRunner): Promise<void> {
    const padded = (column: string) => `${column} IS DISTINCT FROM NULLIF(btrim(${column}, ${TRIM}), '')`;
    await queryRunner.query(
      `CREATE TEMP TABLE trimmed_runs AS
       SELECT DISTINCT partner, run_id FROM partner_records
        WHERE ${padded('reference')} OR ${padded('partner_reference')}`,
    );
    // Every record of those runs, with its old base and number and its base under the trimmed values.
    await queryRunner.query(
      `CREATE TEMP TABLE trimmed_records AS
       SELECT id, partner, run_id, line, identity AS old_identity, new_reference, new_partner_reference,
              substring(identity from '^(.*)#[0-9]+$') AS old_base,
              substring(identity from '#([0-9]+)$')::bigint AS old_n,
              CASE WHEN kind = 'execution' THEN '' ELSE kind || ':' END || ${BASE} AS new_base
         FROM (SELECT pr.*, NULLIF(btrim(pr.reference, ${TRIM}), '') AS new_reference,
                      NULLIF(btrim(pr.partner_reference, ${TRIM}), '') AS new_partner_reference
                 FROM partner_records pr JOIN trimmed_runs t USING (partner, run_id)) r`,
    );
    // Indexed and analysed: the renumbering below looks up, for every record, the others of its run and new
    // base, and a run of a million rows, all padded, must not make that a million scans.
    await queryRunner.query('CREATE INDEX ON trimmed_records (partner, run_id, new_base)');
    await queryRunner.query('ANALYZE trimmed_records');
    // Only the bases that changed, and the unchanged records now sharing one of them, are renumbered.
    await queryRunner.query(
      `CREATE TEMP TABLE reidentified AS
       SELECT t.id, t.partner, t.old_identity, t.new_reference, t.new_partner_reference,
              t.new_base || '#' || (t.old_n + COALESCE((
                SELECT sum(before.n) FROM (
                  SELECT max(o.old_n) AS n FROM trimmed_records o
                   WHERE o.partner = t.partner AND o.run_id = t.run_id AND o.new_base = t.new_base
                     AND o.old_base <> t.old_base AND o.line < t.line
                   GROUP BY o.old_base) before), 0)) AS new_identity
         FROM trimmed_records t
        WHERE EXISTS (SELECT 1 FROM trimmed_records c
                       WHERE c.partner = t.partner AND c.run_id = t.run_id AND c.new_base = t.new_base
                         AND c.old_base <> c.new_base)`,
    );
    await queryRunner.query(
      'UPDATE partner_records pr SET reference = r.new_reference, partner_reference = r.new_partner_reference FROM trimmed_records r WHERE r.id = pr.id',
    );
    await queryRunner.query('DELETE FROM reidentified WHERE old_identity = new_identity');
    await queryRunner.query('CREATE INDEX ON reidentified (partner, new_identity)');
    await queryRunner.query('CREATE UNIQUE INDEX ON reidentified (id)');
    await queryRunner.query('ANALYZE reidentified');
    // Give up the rewrites that would collide, until none does: with a record keeping its identity, or with
    // another rewrite (the lowest id keeps it).
    for (;;) {
      const dropped = (await queryRunner.query(
        `WITH dropped AS (
           DELETE FROM reidentified r
            WHERE EXISTS (SELECT 1 FROM partner_records pr
                           WHERE pr.partner = r.partner AND pr.identity = r.new_identity
                             AND NOT EXISTS (SELECT 1 FROM reidentified k WHERE k.id = pr.id))
               OR EXISTS (SELECT 1 FROM reidentified k
                           WHERE k.partner = r.partner AND k.new_identity = r.new_identity AND k.id < r.id)
           RETURNING 1)
         SELECT count(*)::int AS n FROM dropped`,
      )) as { n: number }[];
      if (dropped[0]!.n === 0) break;
    }
    // The unique (partner, identity) index is checked row by row: move every changed identity aside first.
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
    await queryRunner.query('DROP TABLE reidentified, trimmed_records, trimmed_runs');
  }

  async down(): Promise<void> {
    // The blanks were not kept: nothing to put back.
  }
}
