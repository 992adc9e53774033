// The CLI's words for a newcomer: links that use the server's public address, the command as
// it was invoked, connection names beside their ids, and the stdio bridge telling a refused key
// from an unreachable server. Pure functions over temp files; no server, no child process.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectionNames, named, nameIdsIn } from '../src/cli/connection-names.ts';
import { invokedAs } from '../src/cli/invoked-as.ts';
import { relayFailure } from '../src/cli/mcp-bridge.ts';
import { recordServeUrl, workspaceWebUrl } from '../src/cli/workspace-url.ts';
import { loadConfig } from '../src/config.ts';

const dirs: string[] = [];
const temp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'dbq-cli-words-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('set-password links', () => {
  it('use DBQ_PUBLIC_URL, else what serve recorded, else DBQ_HOST:DBQ_PORT', () => {
    const dataDir = temp();
    const plain = loadConfig({ DBQ_DATA_DIR: dataDir });
    expect(workspaceWebUrl(plain, 'default')).toBe('http://localhost:8080');
    recordServeUrl(dataDir, 'http://localhost:7200');
    expect(workspaceWebUrl(plain, 'default')).toBe('http://localhost:7200');
    expect(workspaceWebUrl(plain, 'acme')).toBe('http://localhost:7200/w/acme');
    expect(fs.statSync(path.join(dataDir, 'public-url')).mode & 0o777).toBe(0o600);
    const pub = loadConfig({ DBQ_DATA_DIR: dataDir, DBQ_PUBLIC_URL: 'https://dbq.example.com/' });
    expect(workspaceWebUrl(pub, 'default')).toBe('https://dbq.example.com');
    expect(workspaceWebUrl(pub, 'acme')).toBe('https://dbq.example.com/w/acme');
    expect(() => loadConfig({ DBQ_PUBLIC_URL: 'dbq.example.com' })).toThrow(/DBQ_PUBLIC_URL/);
  });
});

describe('the command as invoked', () => {
  it('is `dbq` on the PATH, ./bin/dbq in a checkout, npx dbq from node_modules', () => {
    const root = temp();
    const bin = path.join(root, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'dbq'), '');
    const onPath = path.join(root, 'usr-bin');
    fs.mkdirSync(onPath);
    fs.symlinkSync(path.join(bin, 'dbq'), path.join(onPath, 'dbq'));
    expect(invokedAs(path.join(bin, 'dbq'), root, '')).toBe(`.${path.sep}bin${path.sep}dbq`);
    expect(invokedAs(path.join(onPath, 'dbq'), '/', onPath)).toBe('dbq');
    expect(invokedAs(path.join(bin, 'dbq'), '/', onPath)).toBe('dbq');
    expect(invokedAs(path.join(root, 'node_modules', 'dbq', 'bin', 'dbq'), root, '')).toBe('npx dbq');
  });
});

describe('connection names beside ids', () => {
  it('names known ids and leaves a deleted connection bare', async () => {
    const names = new Map([['conn_01abc', 'shop']]);
    expect(named('conn_01abc', names)).toBe('shop (conn_01abc)');
    expect(named('conn_gone', names)).toBe('conn_gone');
    expect(nameIdsIn('{"connections":["conn_01abc","conn_gone"]}', names)).toBe('{"connections":["shop (conn_01abc)","conn_gone"]}');
    expect(typeof connectionNames).toBe('function');
  });
});

describe('the stdio bridge', () => {
  const endpoint = new URL('http://localhost:7200/mcp');
  it('says the key was refused when the server answered 401', () => {
    const err = Object.assign(new Error('Streamable HTTP error: Error POSTing to endpoint: {"error":"Invalid or missing API key"}'), {
      code: 401,
    });
    const text = relayFailure(endpoint, err);
    expect(text).toContain('reached http://localhost:7200/mcp');
    expect(text).toContain('refused the API key in DBQ_API_KEY');
    expect(text).not.toContain('could not reach');
  });
  it('says "could not reach" only when nothing answered', () => {
    const err = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:7200') });
    expect(relayFailure(endpoint, err)).toBe(
      'dbq mcp could not reach http://localhost:7200/mcp: fetch failed (connect ECONNREFUSED 127.0.0.1:7200)',
    );
  });
});
