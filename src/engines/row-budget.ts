// maxRows / maxBytes accounting shared by the adapters. Sizes are estimates of the JSON
// encoding (close enough to stop a 32 MiB result near 32 MiB, cheap enough per value).

export class RowBudget {
  count = 0;
  bytes = 0;
  truncated = false;
  private readonly maxRows: number;
  private readonly maxBytes: number;

  constructor(maxRows: number, maxBytes: number) {
    this.maxRows = maxRows;
    this.maxBytes = maxBytes;
  }

  /** True if one more row of `size` bytes fits; otherwise marks the result truncated. */
  admit(size: number): boolean {
    if (this.count >= this.maxRows || this.bytes + size > this.maxBytes) {
      this.truncated = true;
      return false;
    }
    this.count++;
    this.bytes += size;
    return true;
  }

  get full(): boolean {
    return this.truncated || this.count >= this.maxRows;
  }
}

/** Approximate JSON size of an encoded value. */
export function estimateSize(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return value.length + 3;
    case 'number':
      return 12;
    case 'boolean':
      return 6;
    case 'bigint':
      return 22;
    case 'object':
      if (value === null) return 5;
      return JSON.stringify(value).length + 1;
    default:
      return 5;
  }
}

export function estimateRowSize(row: readonly unknown[]): number {
  let size = 2;
  for (const value of row) size += estimateSize(value);
  return size;
}
