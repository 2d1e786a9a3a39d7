import { expect } from 'chai';
import { LeaseEndingError } from '../../src/leaseEndingError.js';
import { type AttemptLease, LeaseTimers } from '../../src/leaseTimers.js';

/** Resolves with the time (epoch ms) at which `lease` fires. */
function firedAt(lease: AttemptLease): Promise<number> {
  return new Promise((resolve) => lease.whenEnding(() => resolve(Date.now())));
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The leases share one timer (src/leaseTimers.ts): these pin what the ledger's lease tests rely on, in
 * the orders a busy process produces (claims returning out of the order they were sent).
 */
describe('lease timers: each lease fires on time, once, and never after it is settled', () => {
  it('fires a lease armed later but due earlier on time, and the later one on time too', async () => {
    const timers = new LeaseTimers();
    const start = Date.now();
    const late = timers.arm('1', 1, start + 300);
    const early = timers.arm('2', 1, start + 80);
    const [earlyAt, lateAt] = await Promise.all([firedAt(early), firedAt(late)]);
    expect(earlyAt - start).to.be.within(80, 200);
    expect(lateAt - start).to.be.within(300, 420);
  });

  it('never fires a settled lease, and fires the others behind it', async () => {
    const timers = new LeaseTimers();
    const start = Date.now();
    const settled = timers.arm('1', 1, start + 50);
    const kept = timers.arm('2', 1, start + 120);
    let settledFired = false;
    settled.whenEnding(() => {
      settledFired = true;
    });
    timers.disarm('1', 1);
    const keptAt = await firedAt(kept);
    await delay(50);
    expect(settledFired).to.equal(false);
    expect(settled.signal.aborted).to.equal(false);
    expect(keptAt - start).to.be.within(120, 240);
  });

  it('aborts a signal read before it fired, and one first read after it fired', async () => {
    const timers = new LeaseTimers();
    const readEarly = timers.arm('1', 3, Date.now() + 30);
    const signal = readEarly.signal;
    const readLate = timers.arm('2', 1, Date.now() + 30);
    await Promise.all([firedAt(readEarly), firedAt(readLate)]);
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.be.instanceOf(LeaseEndingError);
    expect(readLate.signal.aborted).to.equal(true);
    expect(readLate.signal.reason).to.be.instanceOf(LeaseEndingError);
  });

  it('fires many leases armed in a shuffled order, each at or after its time and in order', async () => {
    const timers = new LeaseTimers();
    const start = Date.now();
    const offsets = [40, 10, 70, 20, 60, 30, 50, 90, 80, 100];
    const fired: number[] = [];
    const firings = offsets.map((offset, i) => {
      const lease = timers.arm(String(i), 1, start + offset);
      return firedAt(lease).then((at) => {
        expect(at - start).to.be.at.least(offset);
        fired.push(offset);
      });
    });
    timers.disarm('2', 1); // the one due at 70
    await Promise.all(firings.filter((_, i) => i !== 2));
    await delay(30);
    expect(fired).to.deep.equal([10, 20, 30, 40, 50, 60, 80, 90, 100]);
  });
});
