// A reader for the project's Dockerfile, for tests that reproduce its stages without a Docker
// engine: only the instructions the Dockerfile uses are understood; anything else is an error.

export type Instruction =
  | { op: 'WORKDIR'; path: string }
  | { op: 'COPY'; from?: string; sources: string[]; dest: string }
  | { op: 'RUN'; command: string }
  | { op: 'ENV'; name: string; value: string }
  | { op: 'USER'; user: string }
  | { op: 'EXPOSE'; ports: string[] }
  | { op: 'ENTRYPOINT' | 'CMD'; argv: string[] };

export interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

/** Logical lines: comments dropped, `\` continuations joined. */
function logicalLines(text: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // a comment inside a continuation
    if (line.endsWith('\\')) {
      current += line.slice(0, -1) + ' ';
      continue;
    }
    out.push(current + line);
    current = '';
  }
  if (current) throw new Error('the Dockerfile ends in a line continuation');
  return out;
}

function execForm(op: string, rest: string): string[] {
  const argv = JSON.parse(rest) as unknown;
  if (!Array.isArray(argv) || argv.some((a) => typeof a !== 'string'))
    throw new Error(`${op} must be in exec form (a JSON array of strings): ${rest}`);
  return argv as string[];
}

// eslint-disable-next-line complexity -- a Dockerfile reader: one case per instruction it understands
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const line of logicalLines(text)) {
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`not an instruction: ${line}`);
    const op = m[1]!.toUpperCase();
    const rest = m[2]!.trim();
    if (op === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (!from) throw new Error(`FROM: ${rest}`);
      stages.push({ image: from[1]!, name: from[2], instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${op} before FROM`);
    const words = rest.split(/\s+/);
    switch (op) {
      case 'WORKDIR':
        stage.instructions.push({ op, path: rest });
        break;
      case 'COPY': {
        const from = words[0]!.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
        if (words.some((w) => w.startsWith('--'))) throw new Error(`COPY flag not understood: ${rest}`);
        if (words.length < 2) throw new Error(`COPY needs a source and a destination: ${rest}`);
        stage.instructions.push({ op, from, sources: words.slice(0, -1), dest: words.at(-1)! });
        break;
      }
      case 'RUN':
        if (rest.startsWith('[')) throw new Error('RUN in exec form is not understood');
        stage.instructions.push({ op, command: rest });
        break;
      case 'ENV': {
        // One NAME=value, the value bare or in double quotes (no escapes).
        const env = /^([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"\\]*)"|(\S*))$/.exec(rest);
        if (!env) throw new Error(`ENV must be one NAME=value or NAME="value": ${rest}`);
        stage.instructions.push({ op, name: env[1]!, value: env[2] ?? env[3]! });
        break;
      }
      case 'USER':
        stage.instructions.push({ op, user: rest });
        break;
      case 'EXPOSE':
        stage.instructions.push({ op, ports: words });
        break;
      case 'ENTRYPOINT':
      case 'CMD':
        stage.instructions.push({ op, argv: execForm(op, rest) });
        break;
      default:
        throw new Error(`instruction ${op} is not understood by this reader`);
    }
  }
  return stages;
}

/**
 * Whether a context path survives a .dockerignore made of `*` and `!name` lines (the only form
 * this reader accepts): the last matching line wins, as in Docker.
 */
export function includedInContext(dockerignore: string, file: string): boolean {
  let included = true;
  const top = file.replace(/^\.\//, '').split('/')[0]!;
  for (const raw of dockerignore.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const negated = line.startsWith('!');
    const pattern = negated ? line.slice(1) : line;
    if (pattern !== '*' && !/^[\w.-]+$/.test(pattern))
      throw new Error(`.dockerignore pattern not understood by this reader: ${line}`);
    if (pattern === '*' || pattern === top) included = negated;
  }
  return included;
}
