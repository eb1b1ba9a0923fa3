// A ```console block of a Markdown page as data: each `$ command` line and the lines it prints
// (readme-session.test.ts runs the README's with the real kubectl and compares the lines).

export interface SessionStep {
  /** 1-based line of the `$ ` line in the page, for failure messages. */
  line: number;
  /** The command as written after `$ `. */
  command: string;
  /** The lines shown below it until the next `$ ` line or the block's end, blank lines at its end dropped. */
  output: string[];
}

/**
 * The first ```console block after the heading `heading` (the heading's whole line, e.g.
 * `## The workflow`) and before the next heading of that level or higher. Throws when there is none,
 * when the block does not open with a `$ ` line, or when it has no end.
 */
export function consoleSession(markdown: string, heading: string): SessionStep[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trimEnd() === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const isEnd = (l: string) => {
    const m = /^(#+) /.exec(l);
    return m !== null && m[1].length <= level;
  };
  let open = -1;
  for (let i = start + 1; i < lines.length && !isEnd(lines[i]); i++)
    if (lines[i].trimEnd() === '```console') {
      open = i;
      break;
    }
  if (open < 0) throw new Error(`no \`\`\`console block under "${heading}"`);
  const close = lines.findIndex((l, i) => i > open && l.trimEnd() === '```');
  if (close < 0) throw new Error(`the \`\`\`console block at line ${open + 1} has no end`);
  const steps: SessionStep[] = [];
  for (let i = open + 1; i < close; i++) {
    const text = lines[i];
    if (text.startsWith('$ ')) steps.push({ line: i + 1, command: text.slice(2), output: [] });
    else if (steps.length === 0) {
      if (text.trim() !== '') throw new Error(`line ${i + 1}: the block opens with output, not a \`$ \` line`);
    } else steps[steps.length - 1].output.push(text);
  }
  for (const s of steps) while (s.output.length > 0 && s.output[s.output.length - 1].trim() === '') s.output.pop();
  return steps;
}

/**
 * A command line's words as a POSIX shell splits them, for the quoting a docs command uses: words
 * split at blanks, '...' taken as is, "..." with \" \\ \$ \` unescaped, a backslash outside quotes
 * escaping the next character. Anything a shell would expand or redirect ($, `, |, ;, &, <, >, *,
 * ?, ~ unquoted) is refused: a docs command that needs a shell is not run here.
 */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated ' in: ${command}`);
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let s = '';
      for (i++; i < command.length && command[i] !== '"'; i++) {
        if (command[i] === '\\' && '"\\$`'.includes(command[i + 1] ?? '')) s += command[++i];
        else if ('$`'.includes(command[i])) throw new Error(`a shell would expand ${command[i]} in: ${command}`);
        else s += command[i];
      }
      if (i >= command.length) throw new Error(`unterminated " in: ${command}`);
      word = (word ?? '') + s;
    } else if (c === '\\') {
      if (i + 1 >= command.length) throw new Error(`a trailing \\ in: ${command}`);
      word = (word ?? '') + command[++i];
    } else if ('$`|;&<>*?~(){}'.includes(c)) {
      throw new Error(`a shell would interpret ${c} in: ${command}`);
    } else word = (word ?? '') + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}
