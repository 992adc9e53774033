// Certificates for the TLS tests, made with openssl in a directory of the test's own: a CA
// (EC P-256, CA:TRUE, valid two days) and certificates it issues, each as <name>.key and
// <name>.crt there. Used by the database TLS tests and the web form's.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(dir: string, ...args: string[]): Promise<unknown> {
  return run('openssl', args, { cwd: dir });
}

/** A self-signed CA: `<name>.key`, `<name>.crt`, subject `CN=dbq test <name>`. */
export async function makeCa(dir: string, name: string): Promise<void> {
  await openssl(
    dir,
    'req',
    '-x509',
    ...EC,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-subj',
    `/CN=dbq test ${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
}

/** A certificate for `cn` issued by the CA `ca` (made by makeCa in the same directory), with the
 * given extension lines (`subjectAltName=DNS:localhost`, `extendedKeyUsage=clientAuth`, …). */
export async function issue(dir: string, name: string, cn: string, extensions: string[], ca = 'ca'): Promise<void> {
  fs.writeFileSync(path.join(dir, `${name}.ext`), extensions.map((line) => `${line}\n`).join(''));
  await openssl(dir, 'req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
  await openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    `${name}.crt`,
    '-extfile',
    `${name}.ext`,
  );
}

/** The files' texts, by file name. */
export function readPem(dir: string, files: string[]): Record<string, string> {
  return Object.fromEntries(files.map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
}
