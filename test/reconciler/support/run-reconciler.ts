// Runs `trainjob-webhook reconcile` for the end-to-end suites until src/cli.ts routes the
// subcommand (then bin/trainjob-webhook.js reconcile is the same thing).
import { reconcileCommand } from '../../../src/commands/reconcile.ts';

const io = { out: (t: string) => process.stdout.write(`${t}\n`), err: (t: string) => process.stderr.write(`${t}\n`) };
reconcileCommand(process.argv.slice(2), io).then((code) => (process.exitCode = code));
