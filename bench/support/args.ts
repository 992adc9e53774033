// Every bench takes `--name value` options with defaults; nothing richer is needed.
const argv = process.argv.slice(2);

/** The value after `--name` on the command line, or `def`. */
export function option(name: string, def: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
}
