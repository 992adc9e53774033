// Client side of the export tests: read an export response as it arrives (NDJSON lines, CSV
// records by an RFC 4180 state machine, or a whole JSON document), and sample a server
// process's resident memory while it streams.
import fs from 'node:fs';

/** Calls `onLine` for every complete line of the body (the last one may lack its newline). */
export async function readLines(body: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    const text = rest + decoder.decode(chunk, { stream: true });
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      onLine(text.slice(start, nl));
      start = nl + 1;
    }
    rest = text.slice(start);
  }
  rest += decoder.decode();
  if (rest.length > 0) onLine(rest);
}

/** An RFC 4180 reader: quoted fields (with `""`, commas, CR and LF inside), CRLF records.
 * Each field comes with whether it was quoted, so NULL (empty) and '' (`""`) stay apart. */
export async function readCsv(
  body: ReadableStream<Uint8Array>,
  onRecord: (fields: string[], quoted: boolean[]) => void,
): Promise<{ endedCleanly: boolean }> {
  const decoder = new TextDecoder();
  let field = '';
  let fields: string[] = [];
  let quotedFlags: boolean[] = [];
  let quoted = false;
  let inQuotes = false;
  let afterQuote = false;
  let pendingCr = false;
  let fieldStarted = false;
  const endField = () => {
    fields.push(field);
    quotedFlags.push(quoted);
    field = '';
    quoted = false;
    afterQuote = false;
    fieldStarted = false;
  };
  const endRecord = () => {
    endField();
    onRecord(fields, quotedFlags);
    fields = [];
    quotedFlags = [];
  };
  const feed = (text: string) => {
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (pendingCr) {
        pendingCr = false;
        if (ch !== '\n') throw new Error('CR without LF outside quotes');
        endRecord();
        continue;
      }
      if (inQuotes) {
        if (ch === '"') {
          inQuotes = false;
          afterQuote = true;
        } else field += ch;
        continue;
      }
      if (afterQuote && ch === '"') {
        // "" inside a quoted field
        field += '"';
        inQuotes = true;
        afterQuote = false;
        continue;
      }
      if (ch === ',') endField();
      else if (ch === '\r') pendingCr = true;
      else if (ch === '\n') throw new Error('bare LF: records must end with CRLF');
      else if (ch === '"' && !fieldStarted) {
        quoted = true;
        inQuotes = true;
        fieldStarted = true;
      } else {
        if (afterQuote) throw new Error('text after a closing quote');
        field += ch;
        fieldStarted = true;
      }
    }
  };
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) feed(decoder.decode(chunk, { stream: true }));
  feed(decoder.decode());
  const endedCleanly = !inQuotes && !pendingCr && field === '' && fields.length === 0;
  return { endedCleanly };
}

export interface RssSampler {
  /** Stops sampling; the largest VmRSS seen, in MiB. */
  stop(): number;
}

export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export function sampleRss(pid: number, everyMs = 20): RssSampler {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      // process gone
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      try {
        peak = Math.max(peak, rssMiB(pid));
      } catch {
        // process gone
      }
      return peak;
    },
  };
}
