// What every admin command shares: opening the core against the right store, and printing a
// human line or, with --json, one JSON object shaped as the API's `data` would be.
import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError } from 'commander';
import { loadConfig, type Config } from '../config.ts';
import { InvalidRequestError } from '../errors.ts';
import { createLogger } from '../logger.ts';
import { closeServices, createServices, type Services } from '../services.ts';

export interface JsonOpt {
  json?: boolean;
}

export function print(opts: JsonOpt, data: unknown, human: string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(data)}\n` : `${human}\n`);
}

/** The program-wide options (`dbq --data-dir … --init <command>`, or after the command). */
export interface GlobalOptions {
  dataDir?: string;
  init?: boolean;
}

export interface CliContext {
  globals: () => GlobalOptions;
}

/** The configuration with `--data-dir` applied (it outranks DBQ_DATA_DIR). */
export function cliConfig(ctx: CliContext, overrides: Partial<Config> = {}): Config {
  const { dataDir } = ctx.globals();
  return loadConfig(dataDir !== undefined ? { ...process.env, DBQ_DATA_DIR: dataDir } : process.env, overrides);
}

/**
 * An admin command run from the wrong directory would otherwise open `./data` there and
 * silently create a new, empty store (so `user list` says nothing and `user create` writes
 * where no server reads). Only `serve` and `--init` create a store.
 */
function assertStoreExists(config: Config, init: boolean): void {
  if (config.storeUrl || init) return;
  const file = path.join(config.dataDir, 'dbq.sqlite');
  if (fs.existsSync(file)) return;
  throw new InvalidRequestError(
    `No dbq store at ${file} (the data dir is ${config.dataDir}, from ${process.cwd()}). ` +
      'Run dbq from the directory `dbq serve` runs in, or point at its store with --data-dir <dir> or DBQ_DATA_DIR=<dir> ' +
      '(or DBQ_STORE_URL); to create a new store there, add --init.',
    { dataDir: config.dataDir },
  );
}

/** Opens the core for one admin command, runs it, closes everything. */
export async function withCore<T>(ctx: CliContext, fn: (svc: Services) => Promise<T>): Promise<T> {
  const config = cliConfig(ctx);
  assertStoreExists(config, Boolean(ctx.globals().init));
  const svc = await createServices(config, { logger: createLogger('warn', process.stderr as any) });
  try {
    return await fn(svc);
  } finally {
    await closeServices(svc);
  }
}

/** commander argument parser for --port: a clear message instead of a listen() stack. */
export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port > 65535) throw new InvalidArgumentError('not a port number (0-65535).');
  return port;
}

/** A JSON file named on the command line (`-`: standard input); its mistakes are 400s naming
 * the file, as a request body's would be. */
export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new InvalidRequestError(`Cannot read ${file}: ${(err as Error).message}`, { field: 'file' });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidRequestError(`${file} is not valid JSON: ${(err as Error).message}`, { field: 'file' });
  }
}
