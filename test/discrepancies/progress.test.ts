import { expect } from 'chai';
import { createProgress } from '../../src/cli/progress.js';

function fakeTerminal() {
  const writes: string[] = [];
  return { writes, stream: { columns: 80, write: (text: string) => writes.push(text) } };
}

describe('CLI progress bar', () => {
  it('does nothing at all when disabled (not a terminal, or --json)', () => {
    const terminal = fakeTerminal();
    const progress = createProgress({
      label: 'exporting',
      total: 10,
      enabled: false,
      stream: terminal.stream,
    });
    progress.tick();
    progress.update(5);
    progress.finish();
    expect(terminal.writes).to.deep.equal([]);
  });

  it('redraws one line with \\r at most every 100 ms and ends the line on finish', () => {
    const terminal = fakeTerminal();
    let now = 0;
    const progress = createProgress({
      label: 'exporting',
      total: 1000,
      enabled: true,
      stream: terminal.stream,
      now: () => now,
    });
    for (let i = 0; i < 500; i++) progress.tick(); // same instant: drawn once
    expect(terminal.writes).to.have.length(1);
    now = 50;
    progress.tick();
    expect(terminal.writes).to.have.length(1);
    now = 100;
    progress.update(750);
    expect(terminal.writes).to.have.length(2);
    expect(terminal.writes[1]).to.match(/^\rexporting \[#+-+\] 750\/1000 75% /);
    now = 120;
    progress.update(1000);
    progress.finish();
    progress.finish();
    expect(terminal.writes.slice(-2)[0]).to.match(/^\rexporting \[#+\] 1000\/1000 100% /);
    expect(terminal.writes.at(-1)).to.equal('\n');
    expect(terminal.writes).to.have.length(4);
    expect(terminal.writes.every((w) => !w.includes('\n') || w === '\n')).to.equal(true);
    expect(terminal.writes.slice(0, -1).every((w) => w.length <= 80)).to.equal(true);
  });

  it('without a total shows a running count', () => {
    const terminal = fakeTerminal();
    const progress = createProgress({
      label: 'reconciling',
      enabled: true,
      stream: terminal.stream,
      now: () => 0,
    });
    progress.update(42);
    progress.finish();
    expect(terminal.writes[1]).to.match(/^\rreconciling 42 /);
  });
});
