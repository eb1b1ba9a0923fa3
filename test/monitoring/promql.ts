// A small PromQL reader for tests: enough to tokenize the project's alert and dashboard
// expressions, refuse what it does not understand, and list each series selector (metric name
// and the label names it matches on). Not a full parser: it does not check operator grammar.

export type Token =
  | { kind: 'ident'; text: string }
  | { kind: 'string'; text: string }
  | { kind: 'number'; text: string }
  | { kind: 'range'; text: string }
  | { kind: 'op'; text: string };

const OPERATORS = [
  '==',
  '!=',
  '>=',
  '<=',
  '=~',
  '!~',
  '>',
  '<',
  '=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '^',
  ',',
  '(',
  ')',
  '{',
  '}',
];
/** A range or subquery: `[5m]`, `[1h:5m]`, or a Grafana variable `[$__rate_interval]`. */
const RANGE = /^\[\s*(?:\$\w+|\$\{\w+\}|(?:\d+(?:ms|[smhdwy]))+)\s*(?::\s*(?:(?:\d+(?:ms|[smhdwy]))+)?\s*)?\]/;

// eslint-disable-next-line complexity -- a PromQL tokenizer: one branch per token kind, and string escapes
export function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const rest = expr.slice(i);
    const space = /^(?:\s+|#[^\n]*)/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    const quote = rest[0];
    if (quote === '"' || quote === "'" || quote === '`') {
      let j = 1;
      let text = '';
      while (j < rest.length && rest[j] !== quote) {
        if (rest[j] === '\\' && quote !== '`') {
          text += rest[j + 1] ?? '';
          j += 2;
        } else text += rest[j++];
      }
      if (j >= rest.length) throw new Error(`unterminated string at ${i} in ${JSON.stringify(expr)}`);
      tokens.push({ kind: 'string', text });
      i += j + 1;
      continue;
    }
    const range = RANGE.exec(rest);
    if (range) {
      tokens.push({ kind: 'range', text: range[0] });
      i += range[0].length;
      continue;
    }
    const number = /^(?:0x[0-9a-fA-F]+|\d*\.?\d+(?:[eE][+-]?\d+)?)/.exec(rest);
    if (number) {
      tokens.push({ kind: 'number', text: number[0] });
      i += number[0].length;
      continue;
    }
    const ident = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(rest);
    if (ident) {
      tokens.push({ kind: 'ident', text: ident[0] });
      i += ident[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => rest.startsWith(o));
    if (op === undefined) throw new Error(`unexpected ${JSON.stringify(rest[0])} at ${i} in ${JSON.stringify(expr)}`);
    tokens.push({ kind: 'op', text: op });
    i += op.length;
  }
  return tokens;
}

/** Aggregations and functions the expressions may call. */
const FUNCTIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'count',
  'group',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'count_values',
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'predict_linear',
  'changes',
  'resets',
  'histogram_quantile',
  'absent',
  'absent_over_time',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'last_over_time',
  'quantile_over_time',
  'clamp',
  'clamp_min',
  'clamp_max',
  'abs',
  'ceil',
  'floor',
  'round',
  'sqrt',
  'exp',
  'ln',
  'log2',
  'log10',
  'label_replace',
  'label_join',
  'vector',
  'scalar',
  'time',
  'timestamp',
  'sort',
  'sort_desc',
]);
/** Keywords whose parenthesized list names labels, not series. */
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'Inf', 'NaN', 'inf', 'nan']);

export interface Selector {
  metric: string;
  /** Label names in the selector's matchers. */
  labels: string[];
  matchers: { label: string; op: string; value: string }[];
}

/** Every series selector in an expression; throws on an unknown function or unbalanced brackets. */
// eslint-disable-next-line complexity -- a PromQL selector parser: one branch per token kind and matcher check
export function selectors(expr: string): Selector[] {
  const tokens = tokenize(expr);
  const found: Selector[] = [];
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (t.kind === 'op' && t.text === '(') depth++;
    if (t.kind === 'op' && t.text === ')') {
      if (--depth < 0) throw new Error(`unbalanced ) in ${JSON.stringify(expr)}`);
    }
    if (t.kind === 'op' && (t.text === '{' || t.text === '}'))
      throw new Error(`matchers without a metric name in ${JSON.stringify(expr)}`);
    if (t.kind !== 'ident') continue;
    if (LABEL_LISTS.has(t.text) && next?.text === '(') {
      // Skip the label list (and its parentheses).
      const close = tokens.findIndex((u, j) => j > i && u.kind === 'op' && u.text === ')');
      if (close < 0) throw new Error(`unclosed label list in ${JSON.stringify(expr)}`);
      const inside = tokens.slice(i + 2, close);
      if (inside.some((u) => !(u.kind === 'ident' || (u.kind === 'op' && u.text === ','))))
        throw new Error(`not a label list after ${t.text} in ${JSON.stringify(expr)}`);
      i = close;
      continue;
    }
    if (next?.kind === 'op' && next.text === '(') {
      if (!FUNCTIONS.has(t.text)) throw new Error(`unknown function ${t.text} in ${JSON.stringify(expr)}`);
      continue;
    }
    if (KEYWORDS.has(t.text)) continue;
    // An aggregation with its grouping first: `sum by (le) (...)`.
    if (FUNCTIONS.has(t.text) && next?.kind === 'ident' && LABEL_LISTS.has(next.text)) continue;
    const labels: string[] = [];
    const matchers: Selector['matchers'] = [];
    if (next?.kind === 'op' && next.text === '{') {
      let j = i + 2;
      while (!(tokens[j]?.kind === 'op' && tokens[j]!.text === '}')) {
        const [name, op, value, sep] = [tokens[j], tokens[j + 1], tokens[j + 2], tokens[j + 3]];
        if (
          name?.kind !== 'ident' ||
          op?.kind !== 'op' ||
          !['=', '!=', '=~', '!~'].includes(op.text) ||
          value?.kind !== 'string'
        ) {
          throw new Error(`bad matcher in ${t.text}{...} of ${JSON.stringify(expr)}`);
        }
        if (op.text === '=~' || op.text === '!~') new RegExp(`^(?:${value.text})$`); // a bad regex throws
        labels.push(name.text);
        matchers.push({ label: name.text, op: op.text, value: value.text });
        j += 3;
        if (sep?.kind === 'op' && sep.text === ',') j++;
        else if (!(sep?.kind === 'op' && sep.text === '}'))
          throw new Error(`bad matcher list in ${t.text}{...} of ${JSON.stringify(expr)}`);
      }
      i = j;
    }
    found.push({ metric: t.text, labels, matchers });
  }
  if (depth !== 0) throw new Error(`unbalanced ( in ${JSON.stringify(expr)}`);
  return found;
}
