import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0001: the intent ledger.
 *
 * - `intents`: one row per (partner, idempotency key). The unique constraint is what makes a claim atomic.
 *   (This header first described the claim as one `INSERT ... ON CONFLICT DO UPDATE ... WHERE <claimable>`;
 *   it is now two single statements, each atomic on its own: src/ledger/sql/claimIntent.ts inserts a new
 *   key with `ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO NOTHING`, so of concurrent claims
 *   exactly one inserts, and src/ledger/sql/reclaimIntent.ts claims the next attempt of an existing key with
 *   an UPDATE behind `SELECT ... FOR UPDATE`, only from a claimable state. The SQL below is unchanged.)
 * - `intent_attempts`: the attempts of each intent, never deleted while its intent lives; the attempt
 *   number is the fencing token every later write must present. (Since 0006 the running attempt, or the one
 *   its caller completed, lives on the intent row instead; see the view `intent_attempt_history`.)
 * - `discrepancies` + `discrepancy_history`: what finance must look at, and the append-only record of
 *   who changed what. `dedupe_key` makes raising the same discrepancy twice a no-op (re-runs flag nothing new).
 * - `inbox`: dedup for local effects done in the consumer's own transaction.
 *
 * States are CHECK constraints mirroring the `as const` objects in `src/shared/status.ts`.
 */
export class IntentLedger1000000000001 implements MigrationInterface {
  name = 'IntentLedger1000000000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE intents (
        id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        partner             text NOT NULL,
        operation           text NOT NULL,
        key                 text NOT NULL,
        fingerprint         text NOT NULL,
        reference           text,
        amount              numeric,
        currency            text,
        status              text NOT NULL
                            CHECK (status IN ('in_progress', 'completed', 'rejected', 'not_executed', 'unknown')),
        attempt             integer NOT NULL CHECK (attempt >= 1),
        lease_expires_at    timestamptz,
        owner               text,
        partner_honours_key boolean NOT NULL DEFAULT false,
        partner_reference   text,
        response            jsonb,
        reason              jsonb,
        resolved_by         text,
        created_at          timestamptz NOT NULL DEFAULT now(),
        updated_at          timestamptz NOT NULL DEFAULT now(),
        settled_at          timestamptz,
        CONSTRAINT intents_partner_key_unique UNIQUE (partner, key),
        CONSTRAINT intents_currency_format CHECK (currency IS NULL OR currency ~ '^[A-Z]{3}$'),
        CONSTRAINT intents_settled_when_final
          CHECK ((status IN ('completed', 'rejected', 'not_executed')) = (settled_at IS NOT NULL))
      )`);
    // The reconciler's question: which intents of this partner are stuck? Only unsettled rows are indexed.
    await queryRunner.query(`
      CREATE INDEX intents_unsettled ON intents (partner, lease_expires_at)
        WHERE status IN ('in_progress', 'unknown')`);
    await queryRunner.query('CREATE INDEX intents_partner_reference ON intents (partner, reference)');
    await queryRunner.query(
      'CREATE INDEX intents_partner_partner_reference ON intents (partner, partner_reference)',
    );
    await queryRunner.query(
      'CREATE INDEX intents_settled_at ON intents (settled_at) WHERE settled_at IS NOT NULL',
    );

    await queryRunner.query(`
      CREATE TABLE intent_attempts (
        intent_id         bigint NOT NULL REFERENCES intents (id) ON DELETE CASCADE,
        attempt           integer NOT NULL,
        owner             text,
        started_at        timestamptz NOT NULL DEFAULT now(),
        lease_expires_at  timestamptz NOT NULL,
        ended_at          timestamptz,
        outcome           text CHECK (outcome IN ('completed', 'rejected', 'not_executed', 'unknown')),
        partner_reference text,
        response          jsonb,
        error             jsonb,
        resolution        text CHECK (resolution IN ('completed', 'not_executed')),
        resolved_by       text,
        resolved_at       timestamptz,
        PRIMARY KEY (intent_id, attempt)
      )`);

    await queryRunner.query(`
      CREATE TABLE discrepancies (
        id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        kind              text NOT NULL CHECK (kind IN ('duplicate_execution', 'amount_mismatch', 'currency_mismatch',
                            'missing_at_partner', 'orphan_partner_record', 'unresolved', 'late_completion')),
        partner           text NOT NULL,
        intent_id         bigint REFERENCES intents (id),
        attempt           integer,
        run_id            bigint,
        status            text NOT NULL DEFAULT 'open'
                          CHECK (status IN ('open', 'acknowledged', 'resolved', 'dismissed')),
        reference         text,
        partner_reference text,
        amount_at_risk    numeric,
        currency          text,
        summary           text NOT NULL,
        details           jsonb NOT NULL DEFAULT '{}',
        dedupe_key        text NOT NULL,
        assignee          text,
        created_at        timestamptz NOT NULL DEFAULT now(),
        updated_at        timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT discrepancies_dedupe_key_unique UNIQUE (dedupe_key)
      )`);
    await queryRunner.query(
      'CREATE INDEX discrepancies_status_partner ON discrepancies (status, partner, created_at)',
    );
    await queryRunner.query(
      'CREATE INDEX discrepancies_intent ON discrepancies (intent_id) WHERE intent_id IS NOT NULL',
    );
    await queryRunner.query(`
      CREATE TABLE discrepancy_history (
        id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        discrepancy_id  bigint NOT NULL REFERENCES discrepancies (id),
        from_status     text,
        to_status       text NOT NULL,
        actor           text NOT NULL,
        note            text,
        assignee        text,
        at              timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      'CREATE INDEX discrepancy_history_discrepancy ON discrepancy_history (discrepancy_id, id)',
    );
    // History is append-only: enforced here, not by convention.
    await queryRunner.query(`
      CREATE FUNCTION discrepancy_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'discrepancy_history is append-only' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER discrepancy_history_no_change BEFORE UPDATE OR DELETE ON discrepancy_history
        FOR EACH ROW EXECUTE FUNCTION discrepancy_history_append_only()`);

    await queryRunner.query(`
      CREATE TABLE inbox (
        consumer     text NOT NULL,
        message_id   text NOT NULL,
        processed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
      )`);
    await queryRunner.query('CREATE INDEX inbox_processed_at ON inbox (processed_at)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE inbox');
    await queryRunner.query('DROP TABLE discrepancy_history');
    await queryRunner.query('DROP FUNCTION discrepancy_history_append_only');
    await queryRunner.query('DROP TABLE discrepancies');
    await queryRunner.query('DROP TABLE intent_attempts');
    await queryRunner.query('DROP TABLE intents');
  }
}
