// trainjob-webhook: one binary, one subcommand per job.
// A command's module loads only when it runs (its usage text too): `reconcile` (and `serve` with a
// kubeconfig user only it implements: exec, auth-provider) bring @kubernetes/client-node, ~0.6 s
// and ~80 MiB, which `serve` and `review` otherwise do without; `rules` brings `yaml`, which
// `serve` does without (but for a kubeconfig).
import type { CommandIo } from './commands/io.ts';
import { SERVE_USAGE } from './webhook/config.ts';

const USAGE = `Usage: trainjob-webhook <command> [flags]

Commands:
  serve       run the HTTPS admission webhook (validating + mutating) for TrainJobs
  review      decide one change offline from files (--old, --new), print the webhook's answer
  rules       print the rule table, or generate the CRD patch / ValidatingAdmissionPolicy from it
  reconcile   run the reconciler (its own Deployment, or a sidecar in the webhook's pod)
  settle      before an uninstall: finish or revert every numNodes change not carried out yet
  scale       scale a TrainJob to N nodes: pause, set numNodes, resume, wait (also: kubectl trainjob scale)
  status      a TrainJob's node count, rebuild and Kueue admission (also: kubectl trainjob status)

Run "trainjob-webhook <command> --help" for the flags of a command.`;

type Command = (args: string[], io: CommandIo) => Promise<number>;

const COMMANDS: Record<string, { run: Command; usage: () => Promise<string> }> = {
  serve: {
    run: async (args, io) => (await import('./commands/serve.ts')).serveCommand(args, io),
    usage: async () => SERVE_USAGE,
  },
  review: {
    run: async (args, io) => (await import('./commands/review.ts')).reviewCommand(args, io),
    usage: async () => (await import('./commands/review.ts')).REVIEW_USAGE,
  },
  rules: {
    run: async (args, io) => (await import('./commands/rules.ts')).rulesCommand(args, io),
    usage: async () => (await import('./commands/rules.ts')).RULES_USAGE,
  },
  // The usage text comes from the reconciler's flags module alone: --help loads no client.
  reconcile: {
    run: async (args, io) => (await import('./commands/reconcile.ts')).reconcileCommand(args, io),
    usage: async () => (await import('./reconciler/config.ts')).RECONCILE_USAGE,
  },
  settle: {
    run: async (args, io) => (await import('./commands/settle.ts')).settleCommand(args, io),
    usage: async () => (await import('./commands/settle.ts')).SETTLE_USAGE,
  },
  // The kubectl plugin's commands (bin/kubectl-trainjob), with the user's kubeconfig.
  scale: {
    run: async (args, io) => (await import('./commands/trainjob.ts')).scaleCommand(args, io),
    usage: async () => (await import('./commands/trainjob.ts')).projectUsage('scale'),
  },
  status: {
    run: async (args, io) => (await import('./commands/trainjob.ts')).statusCommand(args, io),
    usage: async () => (await import('./commands/trainjob.ts')).projectUsage('status'),
  },
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
    io.out(await command.usage());
    return 0;
  }
  return command.run(args, io);
}
