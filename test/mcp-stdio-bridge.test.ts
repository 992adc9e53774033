// `dbq mcp --url`: the stdio bridge as a user installs it. The package is packed
// with npm, the tarball extracted, and its own bin/dbq spawned by the SDK's stdio client
// against a real listening dbq; it lists tools and runs a query through the relay. Offline:
// the extraction borrows this checkout's node_modules instead of `npm install`, which would
// need the registry or a warm cache.
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module shared with bin/dbq, no type declarations
import { buildIsCurrent } from '../bin/build-state.mjs';
import { mcpEndpoint } from '../src/cli/mcp-bridge.ts';
import { tempDir } from './support/databases.ts';
import { createMcpHarness, dataOf, eventually, type McpHarness } from './support/mcp-harness.ts';

const run = promisify(execFile);
let m: McpHarness;
let packDir: string;
let dbqBin: string;
let packed: string[];

beforeAll(async () => {
  m = await createMcpHarness();
  packDir = tempDir('dbq-pack-');
  // --ignore-scripts: `prepare` would rebuild dist/ in this checkout (and the web app) while
  // other work may be editing src/; a release's `npm pack` runs it.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], { timeout: 120_000 });
  const [info] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  packed = info.files.map((f) => f.path);
  const extracted = path.join(packDir, 'extracted');
  fs.mkdirSync(extracted);
  const tar = spawnSync('tar', ['-xzf', path.join(packDir, info.filename), '-C', extracted]);
  expect(tar.status, String(tar.stderr)).toBe(0);
  const pkg = path.join(extracted, 'package');
  fs.symlinkSync(path.resolve('node_modules'), path.join(pkg, 'node_modules'), 'dir');
  // npm stamps every packed file with one date, so the extracted build always looks current.
  // Packed without `prepare`, a stale dist/server here would be stale there too: drop it and
  // let bin/dbq take its tsx path over the packed sources.
  if (!buildIsCurrent()) fs.rmSync(path.join(pkg, 'dist/server'), { recursive: true, force: true });
  dbqBin = path.join(pkg, 'bin/dbq');
}, 180_000);
afterAll(async () => {
  await m?.close();
  if (packDir) fs.rmSync(packDir, { recursive: true, force: true });
});

function bridge(env: Record<string, string>, url = m.origin) {
  // Only what the bridge needs: PATH for node, and the key (or not).
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [dbqBin, 'mcp', '--url', url],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => (stderr += String(chunk)));
  return { transport, stderr: () => stderr };
}

describe('the packed package', () => {
  it('ships bin/dbq, the build or the sources it runs, and no tests', () => {
    expect(packed).toContain('bin/dbq');
    expect(packed).toContain('bin/build-state.mjs');
    expect(packed).toContain('src/cli/main.ts');
    expect(packed).toContain('src/cli/mcp-bridge.ts');
    expect(packed.some((p) => p.startsWith('test/'))).toBe(false);
  });
});

describe('dbq mcp --url (from the extracted tarball)', () => {
  it('relays tools/list and execute_query between a stdio client and /mcp', async () => {
    const { transport, stderr } = bridge({ DBQ_API_KEY: m.h.adminKey });
    const client = new Client({ name: 'stdio-test', version: '1' });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('execute_query');
      const result = await client.callTool({
        name: 'execute_query',
        arguments: { connectionId: 'lite', sql: 'SELECT name FROM items ORDER BY id' },
      });
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      expect(dataOf(result).rows).toEqual([['apple'], ['pear'], ['plum']]);
      // The session the bridge opened is the server's, bound to the key.
      expect(m.sessions.size).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    // Closing stdin ends the session on the server (DELETE), not only at its idle timeout.
    await eventually(() => m.sessions.size === 0, 5000);
    expect(stderr()).toBe('');
  }, 60_000);

  it('answers a request with a JSON-RPC error when the server refuses the key', async () => {
    const { transport, stderr } = bridge({ DBQ_API_KEY: 'dbq_not_a_key' });
    const client = new Client({ name: 'stdio-test', version: '1' });
    await expect(client.connect(transport)).rejects.toThrow(/401|Invalid or missing API key/);
    // It did reach the server: the message says the key was refused, not "could not reach".
    const again = new Client({ name: 'stdio-test', version: '1' });
    await expect(again.connect(bridge({ DBQ_API_KEY: 'dbq_not_a_key' }).transport)).rejects.toThrow(/refused the API key/);
    await again.close();
    await client.close();
    expect(stderr()).toMatch(/sending to the server failed/);
  }, 60_000);

  it('refuses to start without DBQ_API_KEY, saying why on stderr and nothing on stdout', async () => {
    const res = spawnSync(process.execPath, [dbqBin, 'mcp', '--url', m.origin], {
      env: { PATH: process.env.PATH ?? '' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(res.status).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/DBQ_API_KEY is not set/);
  }, 60_000);
});

describe('mcpEndpoint', () => {
  it.each([
    ['http://localhost:8080', 'http://localhost:8080/mcp'],
    ['http://localhost:8080/', 'http://localhost:8080/mcp'],
    ['http://localhost:8080/w/acme', 'http://localhost:8080/w/acme/mcp'],
    ['http://localhost:8080/w/acme/mcp', 'http://localhost:8080/w/acme/mcp'],
    ['https://acme.example.com/mcp/', 'https://acme.example.com/mcp'],
  ])('%s -> %s', (url, expected) => {
    expect(mcpEndpoint(url).href).toBe(expected);
  });

  it('refuses what is not an http(s) URL', () => {
    expect(() => mcpEndpoint('localhost:8080')).toThrow(/http\(s\)|not a URL/);
    expect(() => mcpEndpoint('nope')).toThrow(/not a URL/);
  });
});
