// Entry for running the CLI as a child process under `node --import tsx` (benches, tests):
// the same as bin/dbq without registering the loader again.
import { main } from './main.ts';

await main(process.argv);
