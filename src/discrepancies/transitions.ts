import { DiscrepancyStatus } from '../shared/status.js';
import type { ReviewAction } from './discrepancyTypes.js';

/** The review workflow `open -> acknowledged -> resolved | dismissed`: where each action may start and leads. */
export const TRANSITIONS: Readonly<
  Record<ReviewAction, { from: readonly DiscrepancyStatus[]; to: DiscrepancyStatus }>
> = {
  acknowledge: { from: [DiscrepancyStatus.Open], to: DiscrepancyStatus.Acknowledged },
  resolve: { from: [DiscrepancyStatus.Open, DiscrepancyStatus.Acknowledged], to: DiscrepancyStatus.Resolved },
  dismiss: {
    from: [DiscrepancyStatus.Open, DiscrepancyStatus.Acknowledged],
    to: DiscrepancyStatus.Dismissed,
  },
};

const REVIEW_ACTIONS: readonly ReviewAction[] = ['acknowledge', 'resolve', 'dismiss'];

/** Statuses whose discrepancies may still be assigned (someone still has to act on them). */
export const ASSIGNABLE_STATUSES: readonly DiscrepancyStatus[] = [
  DiscrepancyStatus.Open,
  DiscrepancyStatus.Acknowledged,
];

export function isReviewAction(value: unknown): value is ReviewAction {
  return typeof value === 'string' && (REVIEW_ACTIONS as readonly string[]).includes(value);
}

/** Whether `action` may be applied to a discrepancy in `status`. */
export function canApply(action: ReviewAction, status: DiscrepancyStatus): boolean {
  return TRANSITIONS[action].from.includes(status);
}

/** The actions a discrepancy in `status` offers (for buttons on the review page). */
export function allowedActions(status: DiscrepancyStatus): ReviewAction[] {
  return REVIEW_ACTIONS.filter((action) => canApply(action, status));
}
