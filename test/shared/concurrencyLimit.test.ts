import { expect } from 'chai';
import { ConcurrencyLimit } from '../../src/shared/concurrencyLimit.js';

/** A task that runs until the test lets it finish, recording when it started. */
function deferred(log: string[], name: string) {
  let finish!: (fail?: boolean) => void;
  const task = () =>
    new Promise<string>((resolve, reject) => {
      log.push(`start ${name}`);
      finish = (fail) => (fail ? reject(new Error(name)) : resolve(name));
    });
  return { task, finish: (fail?: boolean) => finish(fail) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ConcurrencyLimit', () => {
  it('runs at most `limit` tasks, the others in the order they came, also after a task fails', async () => {
    const limit = new ConcurrencyLimit(2);
    const log: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => deferred(log, name));
    const done = [limit.run(a.task), limit.run(b.task), limit.run(c.task), limit.run(d.task)];
    const settled = done.map((p) =>
      p.then(
        (v) => `ok ${v}`,
        (e: Error) => `failed ${e.message}`,
      ),
    );
    await tick();
    expect(log).to.deep.equal(['start a', 'start b']);
    expect(limit.active).to.equal(2);
    b.finish(true);
    await tick();
    expect(log).to.deep.equal(['start a', 'start b', 'start c']);
    expect(limit.active).to.equal(2);
    a.finish();
    await tick();
    expect(log).to.deep.equal(['start a', 'start b', 'start c', 'start d']);
    expect(limit.active).to.equal(2);
    c.finish();
    d.finish();
    expect(await Promise.all(settled)).to.deep.equal(['ok a', 'failed b', 'ok c', 'ok d']);
    expect(limit.active).to.equal(0);
  });

  it('a task that arrives after a turn was handed on still waits: the handover never frees a slot twice', async () => {
    const limit = new ConcurrencyLimit(1);
    const log: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((name) => deferred(log, name));
    const first = limit.run(a.task);
    const second = limit.run(b.task);
    await tick();
    a.finish();
    await first;
    await tick();
    // b has a's turn now; c comes later and must wait for b.
    const third = limit.run(c.task);
    await tick();
    expect(log).to.deep.equal(['start a', 'start b']);
    expect(limit.active).to.equal(1);
    b.finish();
    await second;
    await tick();
    expect(log).to.deep.equal(['start a', 'start b', 'start c']);
    c.finish();
    await third;
    expect(limit.active).to.equal(0);
  });

  it('a task that throws before its first await still gives its turn back', async () => {
    const limit = new ConcurrencyLimit(1);
    const thrown = await limit
      .run(() => {
        throw new Error('at once');
      })
      .catch((e: Error) => e.message);
    expect(thrown).to.equal('at once');
    expect(await limit.run(async () => 'next')).to.equal('next');
    expect(limit.active).to.equal(0);
  });

  it('refuses a limit that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new ConcurrencyLimit(bad)).to.throw(RangeError);
  });
});
