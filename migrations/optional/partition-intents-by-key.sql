-- Opt-in layout: `intents` hash-partitioned by (partner, key), so that the unique claim, the one invariant
-- the hot path leans on (docs/DESIGN.md, invariant 1), is checked inside one partition. docs/SCALING.md says
-- when to use it, what it costs and how it maps onto a Citus distribution.
--
-- Not a numbered migration: it is not applied by `migrate()`. Run it once, after every migration of this
-- version (`intent-ledger migrate`), with no consumer, worker or CLI running (it locks `intents` for as long
-- as copying it takes), in ONE transaction:
--
--     psql "$DATABASE_URL" -v ON_ERROR_STOP=1 --single-transaction -f partition-intents-by-key.sql
--
-- Partitions: 16 (change `partitions` below; hash partitions cannot be split later without a rewrite).
-- What changes besides the layout, because PostgreSQL requires every unique index of a partitioned table to
-- contain the partition key:
--   * `id` is still drawn from one identity, but its uniqueness is no longer an index: `intents_pkey` becomes
--     PRIMARY KEY (partner, key, id) and a plain index `intents_id` serves look-ups by id (one probe per
--     partition: a statement that names only the id visits every partition);
--   * `discrepancies.intent_id` loses its foreign key to `intents(id)` (a foreign key needs a unique index on
--     the referenced columns). `purge` already refuses to delete an intent a discrepancy points at (its
--     NOT EXISTS, src/ledger/sql/purgeSettled.ts), which is what the key protected.
-- A later numbered migration that alters `intents` must then work on the partitioned table too.

DO $partition$
DECLARE
  partitions constant integer := 16;
  view_sql text := pg_get_viewdef('intent_attempt_history'::regclass);
  trigger_sql text[];
  index_sql text[];
  next_id bigint;
  statement text;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'intents'::regclass) = 'p' THEN
    RAISE EXCEPTION 'intents is already partitioned';
  END IF;
  LOCK TABLE intents IN ACCESS EXCLUSIVE MODE;
  -- Triggers and plain indexes as they stand, re-created on the new table under the same names.
  SELECT array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname) INTO trigger_sql
    FROM pg_trigger t WHERE t.tgrelid = 'intents'::regclass AND NOT t.tgisinternal;
  SELECT array_agg(pg_get_indexdef(x.indexrelid) ORDER BY x.indexrelid) INTO index_sql
    FROM pg_index x
   WHERE x.indrelid = 'intents'::regclass
     AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid);

  DROP VIEW intent_attempt_history;
  ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_intent_id_fkey;
  ALTER TABLE intents RENAME TO intents_unpartitioned;

  -- Same columns in the same order (every `SELECT i.*` and the view rely on it), defaults and CHECKs.
  CREATE TABLE intents (LIKE intents_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY HASH (partner, key);
  ALTER TABLE intents ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
  FOR remainder IN 0 .. partitions - 1 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF intents FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                   'intents_p' || lpad(remainder::text, 2, '0'), partitions, remainder);
  END LOOP;

  INSERT INTO intents OVERRIDING SYSTEM VALUE SELECT * FROM intents_unpartitioned;
  SELECT coalesce(max(id), 0) + 1 INTO next_id FROM intents_unpartitioned;
  EXECUTE format('ALTER TABLE intents ALTER COLUMN id RESTART WITH %s', next_id);
  DROP TABLE intents_unpartitioned;

  ALTER TABLE intents ADD CONSTRAINT intents_pkey PRIMARY KEY (partner, key, id);
  ALTER TABLE intents ADD CONSTRAINT intents_partner_key_unique UNIQUE (partner, key);
  CREATE INDEX intents_id ON intents (id);
  FOREACH statement IN ARRAY coalesce(index_sql, '{}') LOOP
    EXECUTE statement;
  END LOOP;
  FOREACH statement IN ARRAY coalesce(trigger_sql, '{}') LOOP
    EXECUTE statement;
  END LOOP;
  EXECUTE 'CREATE VIEW intent_attempt_history AS ' || view_sql;
  ANALYZE intents;
END
$partition$;
