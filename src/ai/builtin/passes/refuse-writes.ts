// Pass: refuse a question that asks to change data. The builtin writes read-only queries, and
// "delete the orders of 2023" read as a list of those orders would answer something else.
import { fail, type ParseState } from '../parse-state.ts';

export function refuseWrites(state: ParseState): void {
  const first = state.tokens.find((x) => x.kind === 'word')?.lower ?? '';
  if (/^(delete|remove|update|insert|drop|create|alter|truncate|modify|rename|grant|revoke|erase|purge)$/.test(first)) {
    fail(`the builtin generator writes read-only queries; "${first}" asks to change data`);
  }
}
