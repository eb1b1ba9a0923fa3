// docs/answers.md's table as data, and the API server's answer to one write as the docs show it:
// the code, the reason and the text kubectl prints (docs-answers.test.ts compares the two).
import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export const ANSWERS_BEGIN = '<!-- answers:begin -->';
export const ANSWERS_END = '<!-- answers:end -->';

export interface TableRow {
  /** 1-based line in the file, for failure messages. */
  line: number;
  cells: string[];
}

/** The one table between the markers: its header cells and its rows (the separator row dropped). */
export function parseAnswersTable(markdown: string): { header: string[]; rows: TableRow[] } {
  const lines = markdown.split('\n');
  const begin = lines.findIndex((l) => l.trim() === ANSWERS_BEGIN);
  const end = lines.findIndex((l) => l.trim() === ANSWERS_END);
  if (begin < 0 || end < begin) throw new Error(`the markers ${ANSWERS_BEGIN} ... ${ANSWERS_END} are missing`);
  const table = lines
    .map((text, i) => ({ text: text.trim(), line: i + 1 }))
    .slice(begin + 1, end)
    .filter((l) => l.text !== '');
  const bad = table.find((l) => !l.text.startsWith('|') || !l.text.endsWith('|'));
  if (bad) throw new Error(`line ${bad.line} between the markers is not a table row: ${bad.text}`);
  const split = (text: string) =>
    text
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replaceAll('\\|', '|'));
  const [head, separator, ...body] = table;
  if (!head || !separator || !/^\|[\s:|-]+\|$/.test(separator.text))
    throw new Error('the table between the markers needs a header row and a separator row');
  const header = split(head.text);
  const rows = body.map((l) => ({ line: l.line, cells: split(l.text) }));
  const short = rows.find((r) => r.cells.length !== header.length);
  if (short) throw new Error(`line ${short.line} has ${short.cells.length} cells, the header ${header.length}`);
  return { header, rows };
}

/** What one write got back, as a user sees it. */
export interface Answer {
  code: number;
  /** The Status's reason when refused; `allowed` when admitted. */
  reason: string;
  /** What kubectl prints (kubectlText). Admitted: ''. */
  text: string;
  /** The API server's Status, when refused (for a failure's message). */
  status?: unknown;
  /** The Warning headers' texts, in order. */
  warnings: string[];
}

/** A text a cell shows: all of it, or (the cell's text ends with `…`) its start. */
export interface ExpectedText {
  text: string;
  prefix: boolean;
}

/** An answer cell: `422 Invalid: \`text…\``, `200 allowed`, `200 allowed, warning: \`text…\`[, warning: ...]`. */
export interface ExpectedAnswer {
  code: number;
  reason: string;
  /** A refusal's one text, or an admitted answer's warnings (none, one, several). */
  texts: ExpectedText[];
}

const expectedText = (quoted: string): ExpectedText =>
  quoted.endsWith('…') ? { text: quoted.slice(0, -1), prefix: true } : { text: quoted, prefix: false };

export function parseAnswerCell(cell: string): ExpectedAnswer {
  const refused = /^(\d{3}) ([A-Z][A-Za-z]+): `([^`]+)`$/.exec(cell);
  if (refused) return { code: Number(refused[1]), reason: refused[2], texts: [expectedText(refused[3])] };
  const allowed = /^(2\d\d) allowed((?:, warning: `[^`]+`)*)$/.exec(cell);
  if (!allowed)
    throw new Error(`not an answer cell (CODE Reason: \`text\`, or 200 allowed[, warning: \`text\`]...): ${cell}`);
  const warnings = [...allowed[2].matchAll(/, warning: `([^`]+)`/g)].map((m) => expectedText(m[1]));
  return { code: Number(allowed[1]), reason: 'allowed', texts: warnings };
}

/** Why the answer is not the cell's, or undefined when it is. */
export function mismatch(expected: ExpectedAnswer, got: Answer): string | undefined {
  if (got.code !== expected.code || got.reason !== expected.reason)
    return `${got.code} ${got.reason}, not ${expected.code} ${expected.reason}`;
  const actual = got.reason === 'allowed' ? got.warnings : [got.text];
  if (actual.length !== expected.texts.length)
    return `${actual.length} warning(s), the cell shows ${expected.texts.length}`;
  const bad = expected.texts.findIndex((e, i) => (e.prefix ? !actual[i].startsWith(e.text) : actual[i] !== e.text));
  if (bad < 0) return undefined;
  const what = got.reason === 'allowed' ? `warning ${bad + 1}` : 'the text';
  return `${what} is not the cell's${expected.texts[bad].prefix ? ' start' : ''}`;
}

/** The answer as a cell would show it (every warning, in full): what a failure prints. */
export function describeAnswer(a: Answer): string {
  if (a.reason === 'allowed') return [`${a.code} allowed`, ...a.warnings.map((w) => `warning: \`${w}\``)].join(', ');
  return `${a.code} ${a.reason}: \`${a.text}\``;
}

interface Status {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { kind?: string; name?: string; causes?: { field?: string; message?: string }[] };
}

/**
 * What kubectl prints for a refused write (k8s.io/kubectl v0.35.8 pkg/cmd/util/helpers.go
 * checkErr, StandardErrorMessage), several lines joined by a space: an Invalid one as
 * `The <Kind> "<name>" is invalid: ` and its causes (`field: message`, several as `* ` items, the
 * message itself only when there is neither kind, name nor cause), any other as
 * `Error from server (<Reason>): <message>`.
 */
export function kubectlText(status: Status): string {
  const message = status.message ?? '';
  if (status.reason !== 'Invalid')
    return status.reason ? `Error from server (${status.reason}): ${message}` : `Error from server: ${message}`;
  const d = status.details;
  if (!d) return message ? `The request is invalid: ${message}` : 'The request is invalid';
  const each = [...new Set((d.causes ?? []).map((c) => `${c.field ?? ''}: ${c.message ?? ''}`))];
  const named = d.kind || d.name;
  const s = named
    ? `The ${d.kind ?? ''} "${d.name ?? ''}" is invalid`
    : `The request is invalid${message && each.length === 0 ? `: ${message}` : ''}`;
  if (each.length === 0) return s;
  return each.length === 1 ? `${s}: ${each[0]}` : `${s}: ${each.map((e) => `* ${e}`).join(' ')}`;
}

/** `299 - "text"` (RFC 7234, as the API server writes a warning) → text. */
function warningTexts(header: string | string[] | undefined): string[] {
  const values = header === undefined ? [] : Array.isArray(header) ? header : [header];
  return values.flatMap((v) => {
    const out: string[] = [];
    const re = /\d{3} \S+ "((?:[^"\\]|\\.)*)"/g;
    for (let m = re.exec(v); m; m = re.exec(v)) out.push(m[1].replace(/\\(.)/g, '$1'));
    return out;
  });
}

/**
 * One request to the API server as the kubeconfig's user, with the Status and the warnings kept
 * (the generated clients drop the warnings). Resolves with the parsed body as well.
 */
export async function apiRequest(
  kc: KubeConfig,
  method: 'GET' | 'PUT' | 'PATCH',
  apiPath: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ answer: Answer; body: any }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no cluster');
  const url = new URL(apiPath, cluster.server);
  const opts: Parameters<typeof request>[1] = { method, headers: { Accept: 'application/json' } };
  await kc.applyToHTTPSOptions(opts);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  if (payload !== undefined) opts.headers = { ...opts.headers, 'Content-Type': contentType };
  return new Promise((resolve, reject) => {
    const req = request(url, opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const parsed = text ? JSON.parse(text) : undefined;
        const code = res.statusCode ?? 0;
        const warnings = warningTexts(res.headers.warning);
        const ok = code >= 200 && code < 300;
        resolve({
          body: parsed,
          answer: ok
            ? { code, reason: 'allowed', text: '', warnings }
            : {
                code,
                reason: (parsed as Status)?.reason ?? '',
                text: kubectlText(parsed ?? {}),
                warnings,
                status: parsed,
              },
        });
      });
    });
    req.once('error', reject);
    req.end(payload);
  });
}
