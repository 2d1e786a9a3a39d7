import { expect } from 'chai';
import { type AttemptLease, LeaseTimers } from '../../src/ledger/leaseTimers.js';
import { LeaseEndingError } from '../../src/shared/errors/LeaseEndingError.js';

/** Resolves with the time (the lease clock's) at which `lease` fires. */
function firedAt(lease: AttemptLease): Promise<number> {
  return new Promise((resolve) => lease.whenEnding(() => resolve(LeaseTimers.now())));
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The leases share one timer (src/ledger/leaseTimers.ts): these pin what the ledger's lease tests rely on, in
 * the orders a busy process produces (claims returning out of the order they were sent).
 */
/** Whose lease it is: only the ledger's errors read it. */
const INTENT = { partner: 'acme-pay', key: 'order-1:charge' };

describe('lease timers: each lease fires on time, once, and never after it is settled', () => {
  it('fires a lease armed later but due earlier on time, and the later one on time too', async () => {
    const timers = new LeaseTimers();
    const start = LeaseTimers.now();
    const late = timers.arm('1', 1, start + 300, INTENT);
    const early = timers.arm('2', 1, start + 80, INTENT);
    const [earlyAt, lateAt] = await Promise.all([firedAt(early), firedAt(late)]);
    expect(earlyAt - start).to.be.within(80, 200);
    expect(lateAt - start).to.be.within(300, 420);
  });

  it('never fires a settled lease, and fires the others behind it', async () => {
    const timers = new LeaseTimers();
    const start = LeaseTimers.now();
    const settled = timers.arm('1', 1, start + 50, INTENT);
    const kept = timers.arm('2', 1, start + 120, INTENT);
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
    const readEarly = timers.arm('1', 3, LeaseTimers.now() + 30, INTENT);
    const signal = readEarly.signal;
    const readLate = timers.arm('2', 1, LeaseTimers.now() + 30, INTENT);
    await Promise.all([firedAt(readEarly), firedAt(readLate)]);
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.be.instanceOf(LeaseEndingError);
    expect(readLate.signal.aborted).to.equal(true);
    expect(readLate.signal.reason).to.be.instanceOf(LeaseEndingError);
  });

  it('fires many leases armed in a shuffled order, each at or after its time and in order', async () => {
    const timers = new LeaseTimers();
    const start = LeaseTimers.now();
    const offsets = [40, 10, 70, 20, 60, 30, 50, 90, 80, 100];
    const fired: number[] = [];
    const firings = offsets.map((offset, i) => {
      const lease = timers.arm(String(i), 1, start + offset, INTENT);
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

  it('fires once: one abort event, one call of the listener', async () => {
    const timers = new LeaseTimers();
    const lease = timers.arm('1', 1, LeaseTimers.now() + 20, INTENT);
    let aborts = 0;
    lease.signal.addEventListener('abort', () => aborts++);
    let endings = 0;
    lease.whenEnding(() => endings++);
    await delay(120);
    timers.disarm('1', 1); // after firing: a no-op
    await delay(20);
    expect({ aborts, endings }).to.deep.equal({ aborts: 1, endings: 1 });
  });

  it('a pair armed again (ids reused after a TRUNCATE) keeps both leases: each fires at its own time', async () => {
    const timers = new LeaseTimers();
    const start = LeaseTimers.now();
    const first = timers.arm('7', 1, start + 40, INTENT);
    const second = timers.arm('7', 1, start + 90, INTENT);
    const [firstAt, secondAt] = await Promise.all([firedAt(first), firedAt(second)]);
    expect(firstAt - start).to.be.within(40, 160);
    expect(secondAt - start).to.be.within(90, 210);
  });

  it('a deadline beyond what setTimeout can count does not fire now, nor delay the leases due before it', async () => {
    const timers = new LeaseTimers();
    const start = LeaseTimers.now();
    const far = timers.arm('1', 1, start + 2 ** 31 + 60_000, INTENT);
    const near = timers.arm('2', 1, start + 50, INTENT);
    let farFired = false;
    far.whenEnding(() => {
      farFired = true;
    });
    const nearAt = await firedAt(near);
    await delay(50);
    expect(nearAt - start).to.be.within(50, 170);
    expect(farFired).to.equal(false);
    timers.disarm('1', 1);
  });

  it('keeps time when the wall clock is stepped back (NTP, a resumed VM)', async () => {
    const timers = new LeaseTimers();
    const realNow = Date.now;
    const start = LeaseTimers.now();
    const lease = timers.arm('1', 1, start + 60, INTENT);
    Date.now = () => realNow() - 60_000;
    try {
      const at = await firedAt(lease);
      expect(at - start).to.be.within(60, 180);
    } finally {
      Date.now = realNow;
    }
  });
});
