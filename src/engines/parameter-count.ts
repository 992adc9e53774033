// The refusal every engine gives a `params` count that does not match the statement's
// placeholders, worded once so PostgreSQL and MySQL/MariaDB answer the same 422.
import { QueryFailedError } from '../errors.ts';

export function parameterCountMismatch(
  needed: number,
  given: number,
  details: { sqlState: string | null; position: null },
  cause?: unknown,
): QueryFailedError {
  const params = `${needed} parameter${needed === 1 ? '' : 's'}`;
  return new QueryFailedError(
    `the statement uses ${params} but ${given} ${given === 1 ? 'was' : 'were'} given`,
    { ...details, expectedParams: needed, givenParams: given },
    cause,
  );
}
