// trainjob-webhook: one binary, one subcommand per job.
import { reviewCommand, type CommandIo } from './commands/review.ts';
import { rulesCommand } from './commands/rules.ts';
import { serveCommand } from './commands/serve.ts';
import { SERVE_USAGE } from './config/serve.ts';
import { REVIEW_USAGE } from './commands/review.ts';
import { RULES_USAGE } from './commands/rules.ts';
import { reconcileCommand, RECONCILE_USAGE } from './commands/reconcile.ts';

const USAGE = `Usage: trainjob-webhook <command> [flags]

Commands:
  serve       run the HTTPS admission webhook (validating + mutating) for TrainJobs
  review      decide one change offline from files (--old, --new), print the webhook's answer
  rules       print the rule table, or generate the CRD patch / ValidatingAdmissionPolicy from it
  reconcile   run the reconciler sidecar

Run "trainjob-webhook <command> --help" for the flags of a command.`;

type Command = (args: string[], io: CommandIo) => Promise<number>;

const COMMANDS: Record<string, { run: Command; usage: string }> = {
  serve: { run: serveCommand, usage: SERVE_USAGE },
  review: { run: reviewCommand, usage: REVIEW_USAGE },
  rules: { run: rulesCommand, usage: RULES_USAGE },
  reconcile: { run: reconcileCommand, usage: RECONCILE_USAGE },
};

export async function main(argv: string[], io: CommandIo): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.out(USAGE);
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    io.out(command.usage);
    return 0;
  }
  return command.run(args, io);
}
