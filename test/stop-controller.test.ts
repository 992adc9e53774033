// StopController replaces AbortController on the query path; a cancel that is lost (or fires
// twice, or reaches a statement that already unlinked) would leave a statement running for
// nobody or cancel the next one on the same connection.
import { describe, expect, it } from 'vitest';
import { Slots } from '../src/engines/slots.ts';
import { linkedController, StopController } from '../src/engines/stop.ts';
import { QueryCanceledError } from '../src/errors.ts';

describe('StopController', () => {
  it('runs each listener once, on the first abort only', () => {
    const c = new StopController();
    const calls: string[] = [];
    c.signal.addEventListener('abort', () => calls.push('a'));
    c.signal.addEventListener('abort', () => calls.push('b'), { once: true });
    expect(c.signal.aborted).toBe(false);
    c.abort();
    c.abort();
    expect(c.signal.aborted).toBe(true);
    expect(calls).toEqual(['a', 'b']);
  });

  it('does not run a removed listener, and keeps the others', () => {
    const c = new StopController();
    const calls: string[] = [];
    const a = () => calls.push('a');
    c.signal.addEventListener('abort', a);
    c.signal.addEventListener('abort', () => calls.push('b'));
    c.signal.removeEventListener('abort', a);
    c.signal.removeEventListener('abort', () => calls.push('never added'));
    c.abort();
    expect(calls).toEqual(['b']);
  });

  it('runs every listener even when one throws, and reports that failure to the caller', () => {
    const c = new StopController();
    const calls: string[] = [];
    c.signal.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    c.signal.addEventListener('abort', () => calls.push('after'));
    expect(() => c.abort()).toThrow('listener failed');
    expect(calls).toEqual(['after']);
    expect(c.signal.aborted).toBe(true);
  });

  it('ignores a listener added after the abort (callers check `aborted` first)', () => {
    const c = new StopController();
    c.abort();
    let called = false;
    c.signal.addEventListener('abort', () => (called = true));
    expect(called).toBe(false);
  });
});

describe('linkedController', () => {
  it('follows a StopSignal until unlinked', () => {
    const parent = new StopController();
    const first = linkedController(parent.signal);
    const second = linkedController(parent.signal);
    second.unlink();
    parent.abort();
    expect(first.controller.signal.aborted).toBe(true);
    expect(second.controller.signal.aborted).toBe(false);
  });

  it('follows a real AbortSignal (the MCP SDK hands tools one)', () => {
    const parent = new AbortController();
    const { controller } = linkedController(parent.signal);
    parent.abort();
    expect(controller.signal.aborted).toBe(true);
  });

  it('starts aborted when the caller already gave up', () => {
    const parent = new StopController();
    parent.abort();
    expect(linkedController(parent.signal).controller.signal.aborted).toBe(true);
  });

  it('aborting the statement does not abort the caller', () => {
    const parent = new StopController();
    const { controller } = linkedController(parent.signal);
    controller.abort();
    expect(parent.signal.aborted).toBe(false);
  });
});

describe('a StopSignal in a queue', () => {
  it('cancels a slot wait, and a granted slot no longer listens', async () => {
    const slots = new Slots(1);
    const release = await slots.acquire(1_000);
    const waiting = new StopController();
    const wait = slots.acquire(1_000, waiting.signal);
    waiting.abort();
    await expect(wait).rejects.toBeInstanceOf(QueryCanceledError);

    const granted = new StopController();
    const next = slots.acquire(1_000, granted.signal);
    release();
    const releaseNext = await next;
    granted.abort(); // after the grant: must not fail or free anything twice
    releaseNext();
    const again = await slots.acquire(10);
    again();
  });
});
