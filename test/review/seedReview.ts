import type { Pool } from 'pg';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { raiseDiscrepancy } from '../../src/discrepancies/sql/raiseDiscrepancy.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import type { DiscrepancyKind } from '../../src/shared/status.js';
import { testLedger } from '../support/testLedger.js';

/** Labels of the seeded discrepancies, for tests to find them by meaning. */
type SeedLabel =
  | 'duplicate'
  | 'amountMismatch'
  | 'missing'
  | 'unresolved'
  | 'orphan'
  | 'currencyMismatch'
  | 'late'
  | 'acknowledged'
  | 'resolved';

export interface SeededReview {
  ids: Record<SeedLabel, string>;
  /** Partner of each seeded discrepancy. */
  partners: Record<SeedLabel, string>;
  kinds: Record<SeedLabel, DiscrepancyKind>;
}

interface RunSpec {
  partner: string;
  source: string;
}

/**
 * A realistic morning for finance: four partners, four currencies, every kind of discrepancy, some already
 * acknowledged or resolved, raised by reconciliation runs over partner report rows. Intents go through the
 * real ledger; runs and partner rows are inserted with SQL; discrepancies with `raiseDiscrepancy`.
 */
export async function seedReview(url: string, sql: Pool): Promise<SeededReview> {
  const ledger = await testLedger(url, { leaseMs: 5_000 });
  try {
    const runs = {
      acme: await insertRun(sql, {
        partner: 'acme-pay',
        source: 'sftp://acme-pay/settlement-2025-03-10.csv',
      }),
      globex: await insertRun(sql, {
        partner: 'globex-payouts',
        source: 'https://api.globex.example/v2/payouts',
      }),
      initech: await insertRun(sql, {
        partner: 'initech-pix',
        source: 'sftp://initech/pix-extrato-20250310.csv',
      }),
      umbrella: await insertRun(sql, {
        partner: 'umbrella-cards',
        source: 'umbrella-cards/daily-2025-03-10.csv',
      }),
    };
    const ids = {} as Record<SeedLabel, string>;
    const partners = {} as Record<SeedLabel, string>;
    const kinds = {} as Record<SeedLabel, DiscrepancyKind>;
    const raise = async (
      label: SeedLabel,
      d: {
        kind: DiscrepancyKind;
        partner: string;
        intentId: string | null;
        runId: string;
        reference: string | null;
        partnerReference: string | null;
        amountAtRisk: string | null;
        currency: string | null;
        summary: string;
        partnerRecordIds?: string[];
        ageHours: number;
      },
    ) => {
      const id = await raiseDiscrepancy(sql, {
        kind: d.kind,
        partner: d.partner,
        intentId: d.intentId,
        attempt: d.intentId ? 1 : null,
        runId: d.runId,
        reference: d.reference,
        partnerReference: d.partnerReference,
        amountAtRisk: d.amountAtRisk,
        currency: d.currency,
        summary: d.summary,
        details: { seeded: true, label },
        dedupeKey: `seed:${label}:${d.partner}:${d.reference ?? d.partnerReference}`,
        actor: 'reconciler',
      });
      if (!id) throw new Error(`seed: discrepancy ${label} already raised`);
      await sql.query(
        `UPDATE discrepancies SET partner_record_ids = $2::bigint[],
                created_at = now() - make_interval(hours => $3), updated_at = now() - make_interval(hours => $3)
          WHERE id = $1`,
        [id, d.partnerRecordIds ?? [], d.ageHours],
      );
      ids[label] = id;
      partners[label] = d.partner;
      kinds[label] = d.kind;
    };

    // acme-pay (BRL): a card charged twice, and a capture for less than we asked.
    const dup = await completed(ledger, 'acme-pay', 'ORD-20931', '1249.90', 'BRL', 'NSU-884120');
    const dupRows = [
      await insertPartnerRow(
        sql,
        runs.acme,
        'acme-pay',
        14,
        'ORD-20931',
        'NSU-884120',
        '1249.90',
        'BRL',
        dup,
      ),
      await insertPartnerRow(
        sql,
        runs.acme,
        'acme-pay',
        15,
        'ORD-20931',
        'NSU-884121',
        '1249.90',
        'BRL',
        dup,
      ),
    ];
    await raise('duplicate', {
      kind: 'duplicate_execution',
      partner: 'acme-pay',
      intentId: dup,
      runId: runs.acme,
      reference: 'ORD-20931',
      partnerReference: 'NSU-884121',
      amountAtRisk: '1249.90',
      currency: 'BRL',
      summary: 'acme-pay charged order ORD-20931 twice (NSU-884120 and NSU-884121): refund one charge.',
      partnerRecordIds: dupRows,
      ageHours: 30,
    });
    const short = await completed(ledger, 'acme-pay', 'ORD-20950', '310.00', 'BRL', 'NSU-884377');
    const shortRow = await insertPartnerRow(
      sql,
      runs.acme,
      'acme-pay',
      41,
      'ORD-20950',
      'NSU-884377',
      '301.00',
      'BRL',
      short,
    );
    await raise('amountMismatch', {
      kind: 'amount_mismatch',
      partner: 'acme-pay',
      intentId: short,
      runId: runs.acme,
      reference: 'ORD-20950',
      partnerReference: 'NSU-884377',
      amountAtRisk: '9.00',
      currency: 'BRL',
      summary: 'acme-pay settled 301.00 BRL for order ORD-20950; we charged 310.00 BRL.',
      partnerRecordIds: [shortRow],
      ageHours: 5,
    });

    // globex-payouts (USD): a payout the report does not show, and one stuck in unknown past the deadline.
    const missing = await completed(ledger, 'globex-payouts', 'PAY-7781', '2500.00', 'USD', 'GX-55120');
    await raise('missing', {
      kind: 'missing_at_partner',
      partner: 'globex-payouts',
      intentId: missing,
      runId: runs.globex,
      reference: 'PAY-7781',
      partnerReference: 'GX-55120',
      amountAtRisk: '2500.00',
      currency: 'USD',
      summary: 'Payout PAY-7781 completed on our side but is absent from the covering globex-payouts report.',
      ageHours: 80,
    });
    const stuck = await unknownOutcome(ledger, 'globex-payouts', 'PAY-7790', '18400.00', 'USD');
    await raise('unresolved', {
      kind: 'unresolved',
      partner: 'globex-payouts',
      intentId: stuck,
      runId: runs.globex,
      reference: 'PAY-7790',
      partnerReference: null,
      amountAtRisk: '18400.00',
      currency: 'USD',
      summary: 'Payout PAY-7790 timed out and no report proves either way; past the partner deadline.',
      ageHours: 200,
    });

    // initech-pix (BRL): money arrived that no intent of ours asked for.
    const orphanRow = await insertPartnerRow(
      sql,
      runs.initech,
      'initech-pix',
      3,
      'PIX-UNKNOWN-118',
      'E18236120202503101502s0aa1',
      '87.35',
      'BRL',
      null,
    );
    await raise('orphan', {
      kind: 'orphan_partner_record',
      partner: 'initech-pix',
      intentId: null,
      runId: runs.initech,
      reference: 'PIX-UNKNOWN-118',
      partnerReference: 'E18236120202503101502s0aa1',
      amountAtRisk: '87.35',
      currency: 'BRL',
      summary: 'initech-pix reports a transfer of 87.35 BRL that matches no intent of ours.',
      partnerRecordIds: [orphanRow],
      ageHours: 2,
    });

    // umbrella-cards (EUR): settled in the wrong currency, and a late answer after reconciliation.
    const wrongCurrency = await completed(ledger, 'umbrella-cards', 'INV-4410', '560.00', 'EUR', 'UC-9001');
    const wrongCurrencyRow = await insertPartnerRow(
      sql,
      runs.umbrella,
      'umbrella-cards',
      7,
      'INV-4410',
      'UC-9001',
      '560.00',
      'GBP',
      wrongCurrency,
    );
    await raise('currencyMismatch', {
      kind: 'currency_mismatch',
      partner: 'umbrella-cards',
      intentId: wrongCurrency,
      runId: runs.umbrella,
      reference: 'INV-4410',
      partnerReference: 'UC-9001',
      amountAtRisk: '560.00',
      currency: 'EUR',
      summary: 'umbrella-cards settled invoice INV-4410 in GBP; we charged EUR.',
      partnerRecordIds: [wrongCurrencyRow],
      ageHours: 50,
    });
    const late = await completed(ledger, 'umbrella-cards', 'INV-4415', '120.00', 'EUR', 'UC-9007');
    await raise('late', {
      kind: 'late_completion',
      partner: 'umbrella-cards',
      intentId: late,
      runId: runs.umbrella,
      reference: 'INV-4415',
      partnerReference: 'UC-9007',
      amountAtRisk: '120.00',
      currency: 'EUR',
      summary: 'A completion for INV-4415 arrived after the reconciler had marked it not executed.',
      ageHours: 12,
    });

    // Some already handled: one acknowledged, one resolved.
    const ack = await completed(ledger, 'acme-pay', 'ORD-20977', '75.50', 'BRL', 'NSU-885002');
    await raise('acknowledged', {
      kind: 'missing_at_partner',
      partner: 'acme-pay',
      intentId: ack,
      runId: runs.acme,
      reference: 'ORD-20977',
      partnerReference: 'NSU-885002',
      amountAtRisk: '75.50',
      currency: 'BRL',
      summary: 'Order ORD-20977 completed on our side but is absent from the acme-pay settlement file.',
      ageHours: 100,
    });
    await reviewDiscrepancies(sql, [ids.acknowledged], 'acknowledge', {
      by: 'Marina Costa',
      note: 'Asked acme-pay support (ticket 4471).',
    });
    const fixed = await completed(ledger, 'globex-payouts', 'PAY-7702', '1320.75', 'USD', 'GX-54980');
    await raise('resolved', {
      kind: 'amount_mismatch',
      partner: 'globex-payouts',
      intentId: fixed,
      runId: runs.globex,
      reference: 'PAY-7702',
      partnerReference: 'GX-54980',
      amountAtRisk: '13.20',
      currency: 'USD',
      summary: 'globex-payouts paid 1307.55 USD for PAY-7702; we sent 1320.75 USD.',
      ageHours: 150,
    });
    await reviewDiscrepancies(sql, [ids.resolved], 'acknowledge', {
      by: 'Marina Costa',
      note: 'Looking into the FX fee.',
    });
    await reviewDiscrepancies(sql, [ids.resolved], 'resolve', {
      by: 'João Pereira',
      note: 'Wire fee; booked to expenses.',
      assignee: 'João Pereira',
    });
    return { ids, partners, kinds };
  } finally {
    await ledger.close();
  }
}

async function insertRun(sql: Pool, run: RunSpec): Promise<string> {
  const result = await sql.query<{ id: string }>(
    `INSERT INTO reconciliation_runs (partner, trigger, source, checksum, status, coverage_from, coverage_to,
                                      rows_read, matched, started_at, finished_at)
     VALUES ($1, 'manual', $2, md5($2), 'succeeded', now() - interval '1 day', now() - interval '1 hour',
             120, 114, now() - interval '50 minutes', now() - interval '49 minutes')
     RETURNING id`,
    [run.partner, run.source],
  );
  return result.rows[0].id;
}

async function insertPartnerRow(
  sql: Pool,
  runId: string,
  partner: string,
  line: number,
  reference: string | null,
  partnerReference: string,
  amount: string,
  currency: string,
  intentId: string | null,
): Promise<string> {
  const result = await sql.query<{ id: string }>(
    `INSERT INTO partner_records (partner, identity, run_id, line, reference, partner_reference, amount, currency,
                                  executed_at, intent_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, now() - interval '20 hours', $9)
     RETURNING id`,
    [
      partner,
      `${partner}:${partnerReference}`,
      runId,
      line,
      reference,
      partnerReference,
      amount,
      currency,
      intentId,
    ],
  );
  return result.rows[0].id;
}

async function completed(
  ledger: Ledger,
  partner: string,
  reference: string,
  amount: string,
  currency: string,
  partnerReference: string,
): Promise<string> {
  const result = await ledger.run(
    {
      partner,
      operation: 'charge',
      key: `${reference}:charge`,
      payload: { reference, amount },
      reference,
      amount,
      currency,
    },
    async () => ({ partnerReference, response: { approved: true } }),
  );
  return result.intentId;
}

async function unknownOutcome(
  ledger: Ledger,
  partner: string,
  reference: string,
  amount: string,
  currency: string,
): Promise<string> {
  const claim = await ledger.begin({
    partner,
    operation: 'payout',
    key: `${reference}:payout`,
    payload: { reference, amount },
    reference,
    amount,
    currency,
  });
  if (claim.kind !== 'claimed') throw new Error('seed: expected a fresh claim');
  await ledger.unknown(claim.intentId, claim.attempt, 'timeout after 30 s waiting for globex-payouts');
  return claim.intentId;
}
