import type { Pool } from 'pg';
import type { Logger } from '../shared/logger.js';
import { refreshRunHeartbeat } from './sql/refreshRunHeartbeat.js';

/** How often a running run refreshes its heartbeat, unless told otherwise (ReconcileOptions.heartbeatMs). */
export const DEFAULT_RUN_HEARTBEAT_MS = 5_000;
/** The least default age at which another process closes a silent run as `abandoned`. */
const MIN_DEFAULT_ABANDON_AFTER_MS = 30_000;

/**
 * The default for ReconcileOptions.abandonAfterMs: three missed heartbeats, and at least 30 s, so a
 * garbage-collection pause, a slow statement on the heartbeat's connection or a database failover of a few
 * seconds never closes a live run.
 */
export function defaultAbandonAfterMs(heartbeatMs: number): number {
  return Math.max(MIN_DEFAULT_ABANDON_AFTER_MS, 3 * heartbeatMs);
}

/**
 * Keeps a run's `heartbeat_at` fresh while it works, over a pooled connection of its own: the run's
 * connection is busy inside its one transaction (and a heartbeat written there would not be seen by others
 * before it commits). One refresh at a time, the next `intervalMs` after the previous one ended, so a slow
 * database never piles up refreshes; a failed refresh is logged and the next one tried (missing a few is
 * what the threshold allows for). The timer is unref'd: it never keeps a process alive on its own.
 */
export class RunHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly pool: Pool,
    private readonly runId: string,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {
    this.schedule();
  }

  /** Stops refreshing and waits for a refresh in flight; nothing is left behind. Safe to call twice. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.beating = this.beat().finally(() => {
        this.beating = undefined;
        this.schedule();
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      if (!(await refreshRunHeartbeat(this.pool, this.runId))) {
        // Finished meanwhile, or closed as abandoned by another process: the run finds out when it closes.
        this.stopped = true;
      }
    } catch (error) {
      this.log.warn(
        { runId: this.runId, err: { message: (error as Error).message } },
        'run heartbeat failed',
      );
    }
  }
}
