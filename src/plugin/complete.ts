// Shell completion: the `__complete` answer (cobra's protocol, which kubectl speaks for a plugin's
// `kubectl_complete-trainjob`: one candidate a line, then `:4`, "no file completion") and the bash
// and zsh scripts that call it. Pure, but for the TrainJob names the edge looks up.

export const COMMANDS = ['scale', 'status', 'completion'] as const;
const CONNECTION_FLAGS = ['--namespace', '--context', '--kubeconfig'];
export const FLAGS: Record<string, string[]> = {
  scale: ['--nodes', '--dry-run=server', '--no-resume', '--timeout', ...CONNECTION_FLAGS],
  status: ['--output', ...CONNECTION_FLAGS],
  completion: [],
};
/** Flags that take the next word as their value. */
export const VALUE_FLAGS = new Set([
  '-n',
  '--namespace',
  '--context',
  '--kubeconfig',
  '-o',
  '--output',
  '--nodes',
  '--dry-run',
  '--timeout',
]);
const NO_FILE_COMPLETION = 4;

/** The command word (the first word that is not a flag or a flag's value) and the other words. */
export function splitCommand(args: readonly string[]): { command?: string; rest: string[] } {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a.startsWith('-')) {
      if (VALUE_FLAGS.has(a)) i++;
      continue;
    }
    return { command: a, rest: [...args.slice(0, i), ...args.slice(i + 1)] };
  }
  return { rest: [...args] };
}

/** The value of a connection flag among the words (`-n x`, `--namespace=x`). */
export function flagValue(words: readonly string[], long: string, short?: string): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === long || (short && w === short)) return words[i + 1];
    if (w.startsWith(`${long}=`)) return w.slice(long.length + 1);
  }
  return undefined;
}

export type Completion = { candidates: string[] } | { names: true };

/** What completes the last word (`words` are those after the program, the last one being typed). */
// eslint-disable-next-line complexity -- one case per position
export function completeWords(words: readonly string[]): Completion {
  const typed = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const prev = before.at(-1);
  const { command, rest } = splitCommand(before);
  const match = (list: readonly string[]) => ({ candidates: list.filter((c) => c.startsWith(typed)) });
  if (prev === '-o' || prev === '--output') return match(['json', 'yaml']);
  if (prev === '--dry-run') return match(['server', 'none']);
  if (prev && VALUE_FLAGS.has(prev)) return { candidates: [] };
  if (!command) return typed.startsWith('-') ? match(CONNECTION_FLAGS) : match(COMMANDS);
  if (command === 'completion') return rest.length === 0 ? match(['bash', 'zsh']) : { candidates: [] };
  if (typed.startsWith('-')) return match(FLAGS[command] ?? []);
  const positionals = splitPositionals(rest);
  return (command === 'scale' || command === 'status') && positionals === 0 ? { names: true } : { candidates: [] };
}

function splitPositionals(words: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < words.length; i++) {
    if (words[i].startsWith('-')) {
      if (VALUE_FLAGS.has(words[i])) i++;
    } else n++;
  }
  return n;
}

/** cobra's answer: the candidates, then the directive. */
export const completionAnswer = (candidates: readonly string[]) => [...candidates, `:${NO_FILE_COMPLETION}`].join('\n');

export function completionScript(shell: 'bash' | 'zsh', program: string): string {
  const fn = `_${program.replace(/[^A-Za-z0-9]/g, '_')}`;
  if (shell === 'bash')
    return `# bash completion for ${program}: source <(${program} completion bash)
${fn}() {
  local IFS=$'\\n'
  local out
  out=$(${program} __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  COMPREPLY=($(printf '%s\\n' "$out" | grep -v '^:'))
}
complete -F ${fn} ${program}`;
  return `#compdef ${program}
# zsh completion for ${program}: source <(${program} completion zsh)
${fn}() {
  local -a out
  out=("\${(@f)$(${program} __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -- \${out:#:*}
}
compdef ${fn} ${program}`;
}
