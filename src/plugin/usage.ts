// The plugin's --help texts, for `kubectl trainjob` and for the same commands under
// `trainjob-webhook` (docs/cli.md is generated from them).
import { DEFAULT_TIMEOUT } from './args.ts';

const CONNECTION = `  -n, --namespace NS   the namespace (default: the context's, else "default")
      --context NAME   the kubeconfig context to use
      --kubeconfig FILE
                       the kubeconfig file, alone (default: the files KUBECONFIG lists, merged as
                       kubectl merges them, else ~/.kube/config)`;

export function pluginUsage(program: string): string {
  return `Scale a Kubeflow TrainJob to another number of nodes, and see where its node count stands.

Usage:
  ${program} <command> [flags]

Commands:
  scale        pause the job, change spec.trainer.numNodes, resume it, wait until it runs on the new count
  status       the node count asked for and the one running, the rebuild, Kueue's admission, what to do next
  completion   print a shell completion script (bash or zsh)

Run "${program} <command> --help" for the flags of a command.`;
}

export function scaleUsage(program: string): string {
  return `Scale a TrainJob to N nodes: pause it, wait until its pods are gone, set spec.trainer.numNodes,
resume it, and wait until its JobSet is rebuilt for N nodes and its pods are scheduled. Each step
is one line with its elapsed time. Your training code must save checkpoints: the pods are stopped
(they have their terminationGracePeriodSeconds to save one) and new ones start on N nodes.

Before it writes anything it checks your rights (SelfSubjectAccessReview) and sends one server-side
dry run of the update that suspends and scales together, so a change that cannot work (a finished
job, a runtime the reconciler cannot rebuild, no reconciler running, a cluster without
trainjob-webhook's CRD patch) is refused with what to do, and nothing is changed.

Under Kueue (the job has the label kueue.x-k8s.io/queue-name) the pause is the update that suspends
and sets numNodes together, and Kueue resumes the job once its Workload is admitted: while it waits,
Kueue's reason is shown. A job that was suspended before is scaled and stays suspended.

Its progress is recorded on the TrainJob (annotation trainjob-webhook.kubeflow.org/scale-progress):
after Ctrl-C, the same command continues from where it stopped.

Usage:
  ${program} scale NAME --nodes N [flags]

Examples:
  # Scale the TrainJob llama-finetune to 4 nodes
  ${program} scale llama-finetune -n ml-team --nodes 4

  # Check that the scale would be admitted, without changing anything
  ${program} scale llama-finetune -n ml-team --nodes 4 --dry-run=server

  # Scale it and leave it suspended; a later scale without --no-resume resumes it
  ${program} scale llama-finetune -n ml-team --nodes 4 --no-resume

Flags:
      --nodes N        the number of nodes (spec.trainer.numNodes), 0 or more (required)
      --dry-run=server only check: the rights, then one server-side dry run; nothing is changed
      --no-resume      leave the job suspended at the end (under Kueue: pauses it by the Workload's
                       spec.active: false, which needs the right to patch Workloads)
      --timeout DURATION
                       give up after this long, leaving the job where it is (default ${DEFAULT_TIMEOUT});
                       0 waits without a limit, as kubectl rollout status --timeout=0 does
${CONNECTION}

Exit code 0 when the job is scaled (or the dry run admitted), 1 on an error or a refusal, 130 when
interrupted (Ctrl-C).`;
}

export function statusUsage(program: string): string {
  return `Show a TrainJob's node count: the count asked for (spec.trainer.numNodes) and the one its JobSet
is built for, the rebuild (none, pending, done, blocked and why), Kueue's admission and its reason,
whether a rebuild runs the runtime's initializers again, and what to do next. Without NAME, a table
of every TrainJob in the namespace.

Usage:
  ${program} status [NAME] [flags]

Examples:
  # Every TrainJob in the namespace ml-team
  ${program} status -n ml-team

  # One job, as JSON
  ${program} status llama-finetune -n ml-team -o json

Flags:
  -o, --output FORMAT  json or yaml (default: a short text)
${CONNECTION}

Exit code 0, or 1 on an error.`;
}

export function completionUsage(program: string): string {
  return `Print a shell completion script for ${program}.

Usage:
  ${program} completion bash|zsh

Examples:
  source <(${program} completion bash)
  source <(${program} completion zsh)

kubectl completes "kubectl trainjob ..." through the executable kubectl_complete-trainjob, which
ships beside kubectl-trainjob: put both on your PATH.`;
}
