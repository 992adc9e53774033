// The AsyncIterable behind RowStream.rows. Not an async generator: a generator that was never
// started ignores return(), and an export that fails before its first row must still hand the
// connection back. Here `cleanup` runs exactly once: on exhaustion, on error, on return()
// (a consumer's `break`), or on abort() by the adapter (timeout, cancel, close).

export interface RowSource {
  /** Next batch of encoded rows; null when the statement has no more. Pulled only when the
   * previous batch is consumed, so a slow consumer holds the database cursor back. */
  pull(): Promise<unknown[][] | null>;
  /** Close the cursor and return the connection. */
  cleanup(): Promise<void>;
}

export interface RowIterable {
  rows: AsyncIterable<unknown[]>;
  /** End the stream from the adapter's side: cleanup runs now, and the consumer's next read
   * fails with `err` (an export must not look complete when it was cut). */
  abort(err: Error): void;
}

export function createRowIterable(source: RowSource, maxRows: number): RowIterable {
  let buffer: unknown[][] = [];
  let index = 0;
  let emitted = 0;
  let finished = false;
  let failure: Error | null = null;
  let cleaning: Promise<void> | null = null;

  const finish = (): Promise<void> => {
    finished = true;
    cleaning ??= source.cleanup().catch(() => {});
    return cleaning;
  };

  const iterator: AsyncIterableIterator<unknown[]> = {
    async next(): Promise<IteratorResult<unknown[]>> {
      while (!finished) {
        if (emitted >= maxRows) break;
        if (index < buffer.length) {
          emitted++;
          return { done: false, value: buffer[index++] };
        }
        let batch: unknown[][] | null;
        try {
          batch = await source.pull();
        } catch (err) {
          await finish();
          throw failure ?? err;
        }
        if (!batch) break;
        buffer = batch;
        index = 0;
      }
      await finish();
      if (failure) throw failure;
      return { done: true, value: undefined };
    },
    async return(): Promise<IteratorResult<unknown[]>> {
      await finish();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return {
    rows: iterator,
    abort(err: Error) {
      if (finished) return;
      failure = err;
      void finish();
    },
  };
}
