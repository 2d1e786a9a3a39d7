import { expect } from 'chai';
import type { PoolClient } from 'pg';
import { probeOrJoin, probesTable } from '../../src/reconcile/probeOrJoin.js';
import { useReconcileFixture } from './support.js';

/**
 * How a run reads the ledger's tables for its own rows (src/reconcile/probeOrJoin.ts): by one index probe
 * per row when the table is much larger than the run's table, by a join when the two are of a size, and the
 * same rows either way. Sizes are what ANALYZE counted, as in a run.
 */
describe('reconcile: probe or join', function () {
  this.timeout(120_000);
  const fx = useReconcileFixture('rec_probe');
  let client: PoolClient;

  // In a describe of their own, so the client is released before the fixture's pool ends.
  describe('on one connection, in one transaction, as a run', () => {
    before(async () => {
      client = await fx.sql.connect();
      await client.query(
        `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                            lease_expires_at, attempt_started_at, settled_at)
       SELECT 'probe-big', 'charge', 'k-' || g, 'fp', 'r-' || g, 1.00, 'BRL', 'completed', 1, now(), now(), now()
         FROM generate_series(1, 200000) AS g`,
      );
      await client.query('ANALYZE intents');
      await client.query('BEGIN');
    });

    after(async () => {
      await client.query('ROLLBACK');
      client.release();
    });

    async function runTable(name: string, rows: number): Promise<void> {
      await client.query(
        `CREATE TEMP TABLE ${name} ON COMMIT DROP AS
       SELECT g AS line, 'r-' || (g * 7) AS reference FROM generate_series(1, ${rows}) AS g`,
      );
      await client.query(`ANALYZE ${name}`);
    }

    it('probes for a small run table, whatever the ledger table holds', async () => {
      await runTable('probe_small', 500);
      expect(await probesTable(client, 'intents', 'probe_small')).to.equal(true);
      expect(await probesTable(client, 'partner_records', 'probe_small')).to.equal(true);
    });

    it('probes when the ledger table is many times the run table, joins when they are of a size', async () => {
      await runTable('probe_fifth', 20_000);
      await runTable('probe_same', 150_000);
      expect(await probesTable(client, 'intents', 'probe_fifth')).to.equal(true);
      expect(await probesTable(client, 'intents', 'probe_same')).to.equal(false);
      // An empty partner_records (never analyzed counts as empty) is joined, not probed, for a large report.
      expect(await probesTable(client, 'partner_records', 'probe_same')).to.equal(false);
    });

    it('finds the same rows both ways, and the probe runs as an index scan per row', async () => {
      const query = (probe: boolean) =>
        `SELECT r.line, i.id FROM probe_fifth r
       ${probeOrJoin(probe, 'intents', 'i', ['id'], `i.partner = 'probe-big' AND i.reference = r.reference`)}
       ORDER BY r.line`;
      const probed = await client.query(query(true));
      const joined = await client.query(query(false));
      expect(probed.rows.length).to.equal(20_000);
      expect(probed.rows).to.deep.equal(joined.rows);
      const plan = await client.query(`EXPLAIN ${query(true)}`);
      const text = plan.rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      expect(text).to.match(/Nested Loop/);
      expect(text).to.match(/Index Scan using intents_partner_reference on intents/);
      expect(text).not.to.match(/Seq Scan on intents/);
    });

    it('with `left`, keeps a row that selects nothing once, with NULLs, both ways', async () => {
      // References r-7 to r-280000 against intents r-1 to r-200000: 28,571 rows find theirs, 11,429 none.
      await runTable('probe_left', 40_000);
      const query = (probe: boolean) =>
        `SELECT r.line, i.id FROM probe_left r
       ${probeOrJoin(probe, 'intents', 'i', ['id'], `i.partner = 'probe-big' AND i.reference = r.reference`, { left: true })}
       ORDER BY r.line`;
      const probed = await client.query<{ line: number; id: string | null }>(query(true));
      const joined = await client.query<{ line: number; id: string | null }>(query(false));
      expect(probed.rows.length).to.equal(40_000);
      expect(probed.rows.filter((row) => row.id === null).length).to.equal(11_429);
      expect(probed.rows).to.deep.equal(joined.rows);
    });
  });
});
