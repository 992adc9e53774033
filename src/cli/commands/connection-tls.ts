// --ssl-ca-file, --ssl-cert-file, --ssl-key-file of `dbq connection add|update`: the PEM files
// are read here and sent on as the body's sslCa, sslCert, sslKey (sealed in the store, never
// printed); `none` removes one.
import fs from 'node:fs';
import type { Command } from 'commander';
import { InvalidRequestError } from '../../errors.ts';

export interface TlsOpts {
  sslCaFile?: string;
  sslCertFile?: string;
  sslKeyFile?: string;
}

export function tlsOptions(cmd: Command): Command {
  return cmd
    .option(
      '--ssl-ca-file <file>',
      "PEM of the CA the server's certificate must chain to (verify-full against it instead of the system CAs; turns ssl on); none removes it",
    )
    .option('--ssl-cert-file <file>', 'PEM client certificate for TLS, with --ssl-key-file; none removes it')
    .option('--ssl-key-file <file>', 'PEM private key of --ssl-cert-file (stored sealed, never printed); none removes it');
}

function readPem(file: string | undefined, field: string): string | null | undefined {
  if (file === undefined) return undefined;
  if (file === 'none') return null;
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new InvalidRequestError(`cannot read the file given for ${field}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { field });
  }
}

export function tlsFromOptions(opts: TlsOpts): { sslCa?: string | null; sslCert?: string | null; sslKey?: string | null } {
  const out: { sslCa?: string | null; sslCert?: string | null; sslKey?: string | null } = {};
  const ca = readPem(opts.sslCaFile, 'sslCa');
  const cert = readPem(opts.sslCertFile, 'sslCert');
  const key = readPem(opts.sslKeyFile, 'sslKey');
  if (ca !== undefined) out.sslCa = ca;
  if (cert !== undefined) out.sslCert = cert;
  if (key !== undefined) out.sslKey = key;
  return out;
}
