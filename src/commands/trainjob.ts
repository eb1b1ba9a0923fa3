// `kubectl trainjob` (bin/kubectl-trainjob) and the same commands under `trainjob-webhook`
// (scale, status): the flags, the connection (kubectl's kubeconfig, context and namespace), SIGINT,
// the terminal. The work is src/plugin/'s.
import { parseScaleArgs, parseStatusArgs, UsageError, type ConnectionFlags } from '../plugin/args.ts';
import { connect, type Cluster } from '../plugin/cluster.ts';
import { completeWords, completionAnswer, completionScript, flagValue, splitCommand } from '../plugin/complete.ts';
import { pluginKubeconfig } from '../plugin/kubeconfig.ts';
import type { StepOutput } from '../plugin/progress-line.ts';
import { runScale } from '../plugin/scale-run.ts';
import { runStatus } from '../plugin/status-run.ts';
import { completionUsage, pluginUsage, scaleUsage, statusUsage } from '../plugin/usage.ts';
import type { CommandIo } from './io.ts';

export const PLUGIN = 'kubectl trainjob';
export const PROJECT = 'trainjob-webhook';

/** Where scale's progress lines go: stdout as it is (a spinner redraws a line without its newline). */
export interface PluginIo extends CommandIo {
  steps?: StepOutput;
}

const stdoutSteps = (): StepOutput => ({
  write: (t) => void process.stdout.write(t),
  isTTY: process.stdout.isTTY === true,
});

/** The kubeconfig is read once, for the namespace and the connection both. */
async function cluster(flags: ConnectionFlags): Promise<Cluster> {
  const { merged, namespace } = await pluginKubeconfig(flags);
  return connect(merged, flags.context, namespace);
}

/** The command's flags and the cluster they name, or exit code 1 once the error is shown. */
async function parsedAndConnected<A extends ConnectionFlags>(
  parse: (args: string[]) => A,
  args: string[],
  io: CommandIo,
  program: string,
  command: 'scale' | 'status',
): Promise<{ parsed: A; c: Cluster } | number> {
  let parsed: A;
  try {
    parsed = parse(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`error: ${err.message}\nSee '${program} ${command} --help' for usage.`);
    return 1;
  }
  try {
    return { parsed, c: await cluster(parsed) };
  } catch (err) {
    io.err(`error: ${(err as Error).message.split('\n')[0]}`);
    return 1;
  }
}

/** The --help of scale or status under trainjob-webhook. */
export const projectUsage = (command: 'scale' | 'status') =>
  command === 'scale' ? scaleUsage(PROJECT) : statusUsage(PROJECT);

export async function scaleCommand(args: string[], io: PluginIo, program = PROJECT): Promise<number> {
  const ready = await parsedAndConnected(parseScaleArgs, args, io, program, 'scale');
  if (typeof ready === 'number') return ready;
  const { parsed, c } = ready;
  const interrupt = new AbortController();
  const onSigint = () => {
    if (interrupt.signal.aborted) process.exit(130);
    interrupt.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    return await runScale(
      c,
      { ...parsed, namespace: c.namespace },
      { out: io.steps ?? stdoutSteps(), err: io.err, interrupted: interrupt.signal },
      { program },
    );
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export async function statusCommand(args: string[], io: CommandIo, program = PROJECT): Promise<number> {
  const ready = await parsedAndConnected(parseStatusArgs, args, io, program, 'status');
  if (typeof ready === 'number') return ready;
  return runStatus(ready.c, ready.parsed, io, program);
}

/** `__complete WORDS...`: the candidates for the last word; TrainJob names from the cluster, quietly. */
async function complete(words: string[], io: CommandIo): Promise<number> {
  const what = completeWords(words.length ? words : ['']);
  if ('candidates' in what) {
    io.out(completionAnswer(what.candidates));
    return 0;
  }
  const typed = words.at(-1) ?? '';
  try {
    const c = await cluster({
      ...(flagValue(words, '--namespace', '-n') ? { namespace: flagValue(words, '--namespace', '-n') } : {}),
      ...(flagValue(words, '--context') ? { context: flagValue(words, '--context') } : {}),
      ...(flagValue(words, '--kubeconfig') ? { kubeconfig: flagValue(words, '--kubeconfig') } : {}),
    });
    const names = (await c.listTrainJobs()).map((t) => t.metadata.name ?? '').filter((n) => n.startsWith(typed));
    io.out(completionAnswer(names));
  } catch {
    io.out(completionAnswer([]));
  }
  return 0;
}

function completion(args: string[], io: CommandIo, program: string): number {
  const shell = args[0];
  if (args.length !== 1 || (shell !== 'bash' && shell !== 'zsh')) {
    io.err(`error: one shell, bash or zsh\nSee '${program} completion --help' for usage.`);
    return 1;
  }
  io.out(completionScript(shell, program.replace(' ', '-')));
  return 0;
}

/** bin/kubectl-trainjob: kubectl's exit codes (1 for a usage error too). */
export async function pluginMain(argv: string[], io: PluginIo): Promise<number> {
  if (argv[0] === '__complete') return complete(argv.slice(1), io);
  const { command, rest } = splitCommand(argv);
  const help = rest.includes('--help') || rest.includes('-h');
  switch (command) {
    case undefined:
      io.out(pluginUsage(PLUGIN));
      return help ? 0 : 1;
    case 'help':
      io.out(pluginUsage(PLUGIN));
      return 0;
    case 'scale':
      if (help) return (io.out(scaleUsage(PLUGIN)), 0);
      return scaleCommand(rest, io, PLUGIN);
    case 'status':
      if (help) return (io.out(statusUsage(PLUGIN)), 0);
      return statusCommand(rest, io, PLUGIN);
    case 'completion':
      if (help) return (io.out(completionUsage(PLUGIN)), 0);
      return completion(rest, io, PLUGIN);
    default:
      io.err(`error: unknown command "${command}" for "${PLUGIN}"\nRun '${PLUGIN} --help' for usage.`);
      return 1;
  }
}
