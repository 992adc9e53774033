// The breaker alone (src/limits/redis-breaker.ts), with a probe function standing in for PING:
// only a slow failure opens it, one probe runs at a time, and only an answered probe closes it.
// test/faults/redis-hung-breaker.test.ts proves it on a real SIGSTOPped redis-server.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RedisBreaker } from '../src/limits/redis-breaker.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function breakerWith(probe: () => Promise<unknown>) {
  const events: string[] = [];
  const breaker = new RedisBreaker({
    probe,
    slowMs: 100,
    probeEveryMs: 30,
    probeTimeoutMs: 20,
    onOpen: (reason) => events.push(`open: ${reason}`),
    onClose: () => events.push('close'),
  });
  return { breaker, events };
}

describe('RedisBreaker', () => {
  // Its probe schedule and its measure of a slow failure are timers and performance.now():
  // fake ones run them without the test waiting.
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stays closed on a quick failure, opens once on a slow one', () => {
    const { breaker, events } = breakerWith(() => new Promise(() => {}));
    breaker.failed(3, 'WRONGTYPE');
    expect(breaker.open).toBe(false);
    breaker.failed(120, 'Command timed out');
    breaker.failed(150, 'Command timed out');
    expect(breaker.open).toBe(true);
    expect(events).toEqual(['open: Command timed out']);
    breaker.stop();
  });

  it('probes in the background, one at a time, until a probe is answered', async () => {
    let answering = false;
    let inFlight = 0;
    let most = 0;
    let probes = 0;
    const { breaker, events } = breakerWith(async () => {
      probes++;
      inFlight++;
      most = Math.max(most, inFlight);
      try {
        // A hung server: no answer within the probe timeout.
        if (!answering) await sleep(60);
      } finally {
        inFlight--;
      }
    });
    breaker.failed(200, 'Command timed out');
    await vi.advanceTimersByTimeAsync(200);
    expect(breaker.open).toBe(true);
    expect(probes).toBeGreaterThanOrEqual(2);
    answering = true;
    await vi.advanceTimersByTimeAsync(100);
    expect(breaker.open).toBe(false);
    expect(events).toEqual(['open: Command timed out', 'close']);
    expect(most).toBe(1);
    breaker.stop();
  });

  it('watch() reports a command that failed slowly, and passes its result or error through', async () => {
    const { breaker } = breakerWith(() => new Promise(() => {}));
    await expect(breaker.watch(Promise.resolve(7))).resolves.toBe(7);
    await expect(breaker.watch(Promise.reject(new Error('fast')))).rejects.toThrow('fast');
    expect(breaker.open).toBe(false);
    const slow = expect(breaker.watch(sleep(110).then(() => Promise.reject(new Error('Command timed out'))))).rejects.toThrow(
      'Command timed out',
    );
    await vi.advanceTimersByTimeAsync(110);
    await slow;
    expect(breaker.open).toBe(true);
    breaker.stop();
  });

  it('probeSoon() closes it without waiting for the next tick', async () => {
    const { breaker } = breakerWith(async () => 'PONG');
    breaker.failed(200, 'Command timed out');
    breaker.probeSoon();
    await vi.advanceTimersByTimeAsync(5);
    expect(breaker.open).toBe(false);
    breaker.stop();
  });
});
