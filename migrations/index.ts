import { IntentLedger1000000000001 } from './0001-intent-ledger.js';
import { Reconciliation1000000000002 } from './0002-reconciliation.js';
import { PartnerRecordsBulk1000000000003 } from './0003-partner-records-bulk.js';
import { PartnerRecordsSource1000000000004 } from './0004-partner-records-source.js';
import { AttemptsWithoutForeignKey1000000000005 } from './0005-attempts-without-foreign-key.js';
import { CurrentAttemptOnIntent1000000000006 } from './0006-current-attempt-on-intent.js';
import { AmbiguousMatch1000000000007 } from './0007-ambiguous-match.js';
import { RunHeartbeat1000000000008 } from './0008-run-heartbeat.js';
import { ReviewUsers1000000000009 } from './0009-review-users.js';
import { DiscrepancyApprovals1000000000010 } from './0010-discrepancy-approvals.js';
import { RowKinds1000000000011 } from './0011-row-kinds.js';
import { NoRowTriggerOnIntents1000000000014 } from './0014-no-row-trigger-on-intents.js';
import { ApprovalThresholds1000000000016 } from './0016-approval-thresholds.js';
import { FourEyesJudgesBothRows1000000000017 } from './0017-four-eyes-judges-both-rows.js';
import { ProposalKeepsItsAmount1000000000018 } from './0018-proposal-keeps-its-amount.js';
import { TrimmedIdentifiers1000000000019 } from './0019-trimmed-identifiers.js';
import { DiscrepanciesWithoutForeignKeys1000000000020 } from './0020-discrepancies-without-foreign-keys.js';

/** Every migration, in order. A new migration is a new numbered file plus one line here. */
export const migrations = [
  IntentLedger1000000000001,
  Reconciliation1000000000002,
  PartnerRecordsBulk1000000000003,
  PartnerRecordsSource1000000000004,
  AttemptsWithoutForeignKey1000000000005,
  CurrentAttemptOnIntent1000000000006,
  AmbiguousMatch1000000000007,
  RunHeartbeat1000000000008,
  ReviewUsers1000000000009,
  DiscrepancyApprovals1000000000010,
  RowKinds1000000000011,
  NoRowTriggerOnIntents1000000000014,
  ApprovalThresholds1000000000016,
  FourEyesJudgesBothRows1000000000017,
  ProposalKeepsItsAmount1000000000018,
  TrimmedIdentifiers1000000000019,
  DiscrepanciesWithoutForeignKeys1000000000020,
];
