// Preloaded with `--import` (NODE_OPTIONS) into a process under measure: appends the URL of every
// module it loads to the file named by TJW_RECORD_LOADS, one a line (bench/one-client.bench.ts
// reads which packages the process imported).
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const out = process.env.TJW_RECORD_LOADS;
if (out)
  registerHooks({
    load(url, context, nextLoad) {
      appendFileSync(out, `${url}\n`);
      return nextLoad(url, context);
    },
  });
