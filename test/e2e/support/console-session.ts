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

/** The lines of the first ```console block under `heading`, before the next heading of its level or higher. */
function consoleBlock(lines: string[], heading: string): { open: number; close: number } {
  const start = lines.findIndex((l) => l.trimEnd() === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const next = lines.findIndex((l, i) => i > start && (/^(#+) /.exec(l)?.[1].length ?? Infinity) <= level);
  const section = lines.slice(0, next < 0 ? lines.length : next);
  const open = section.findIndex((l, i) => i > start && l.trimEnd() === '```console');
  if (open < 0) throw new Error(`no \`\`\`console block under "${heading}"`);
  const close = lines.findIndex((l, i) => i > open && l.trimEnd() === '```');
  if (close < 0) throw new Error(`the \`\`\`console block at line ${open + 1} has no end`);
  return { open, close };
}

/**
 * The first ```console block after the heading `heading` (the heading's whole line, e.g.
 * `## The workflow`) and before the next heading of that level or higher, as steps. Throws when
 * there is none, when the block does not open with a `$ ` line, or when it has no end.
 */
export function consoleSession(markdown: string, heading: string): SessionStep[] {
  const lines = markdown.split('\n');
  const { open, close } = consoleBlock(lines, heading);
  const steps: SessionStep[] = [];
  for (let i = open + 1; i < close; i++) {
    const text = lines[i];
    if (text.startsWith('$ ')) steps.push({ line: i + 1, command: text.slice(2), output: [] });
    else if (steps.length > 0) steps[steps.length - 1].output.push(text);
    else if (text.trim() !== '') throw new Error(`line ${i + 1}: the block opens with output, not a \`$ \` line`);
  }
  for (const s of steps) while (s.output.length > 0 && s.output[s.output.length - 1].trim() === '') s.output.pop();
  return steps;
}

/**
 * One piece of a command line: blanks; a '...' word part; a "..." one (only \" \\ \$ \` escaped,
 * nothing a shell expands); a backslash and the character it escapes; plain characters.
 */
const PIECE = /\s+|'([^']*)'|"((?:[^"\\$`]|\\["\\$`])*)"|\\(.)|([^\s'"\\$`|;&<>*?~(){}]+)/y;

/**
 * A command line's words as a POSIX shell splits them, for the quoting a docs command uses: words
 * split at blanks, '...' taken as is, "..." with \" \\ \$ \` unescaped, a backslash outside quotes
 * escaping the next character. Anything a shell would expand or redirect ($, `, |, ;, &, <, >, *,
 * ?, ~, parentheses, braces unquoted) is refused: a docs command that needs a shell is not run here.
 */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < command.length; i = PIECE.lastIndex) {
    PIECE.lastIndex = i;
    const m = PIECE.exec(command);
    if (!m)
      throw new Error(`column ${i + 1}: a shell would interpret ${command[i]} (or a quote has no end) in: ${command}`);
    if (/^\s/.test(m[0])) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + (m[1] ?? m[2]?.replace(/\\(.)/g, '$1') ?? m[3] ?? m[4]);
  }
  if (word !== undefined) words.push(word);
  return words;
}
