// Compiles a rule once at start-up (a rule that does not parse or type-check stops start-up
// with its position) and instruments it: a cost charge per evaluated node, and RE2 matches().
//
// cel-js 8.0.0 has neither a cost limit nor a way to replace a built-in function, so this
// walks its AST (ASTNode: op, args, meta) and wraps each node's `evaluate`. The version is
// pinned exactly and test/cel/ fails if these internals change.
import type { Environment } from '@marcbachmann/cel-js';
import { charge, CostMeter, withMeter } from './cost.ts';
import { checkRe2Pattern, re2Matches } from './re2.ts';
import { readsOf, type Reads } from './reads.ts';

export class CelCompileError extends Error {}

interface Evaluator {
  run(ast: AstNode, ctx: unknown): unknown;
}
type EvaluateFn = (this: unknown, ev: Evaluator, ast: unknown, ctx: unknown) => unknown;
interface AstMeta {
  alternate?: AstNode;
  macro?: { evaluate: EvaluateFn } & Record<string, unknown>;
  evaluate?: EvaluateFn;
}
interface AstNode {
  op: string;
  args: unknown;
  meta: AstMeta;
  evaluate: EvaluateFn;
}

function isAstNode(v: unknown): v is AstNode {
  return (
    typeof v === 'object' && v !== null && 'op' in v && 'meta' in v && typeof (v as AstNode).evaluate === 'function'
  );
}

/** Every AST node reachable from the root, through args, macro expansions and alternates. */
function collectNodes(root: unknown): AstNode[] {
  const seen = new Set<unknown>();
  const nodes: AstNode[] = [];
  const visit = (v: unknown): void => {
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (isAstNode(v)) {
      nodes.push(v);
      visit(v.args);
      visit(v.meta.alternate);
      visit(v.meta.macro);
      return;
    }
    if (Array.isArray(v)) v.forEach(visit);
    else if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)
      Object.values(v).forEach(visit);
    else for (const key of Object.keys(v)) visit((v as Record<string, unknown>)[key]);
  };
  visit(root);
  return nodes;
}

function resolveEvaluate(node: AstNode): EvaluateFn {
  const { alternate, macro, evaluate } = node.meta;
  if (alternate) return (ev, _ast, ctx) => alternate.evaluate(ev, alternate, ctx);
  if (macro) return (ev, _ast, ctx) => macro.evaluate.call(macro, ev, macro, ctx);
  if (!evaluate) throw new CelCompileError(`cel-js internals changed: node "${node.op}" has no evaluate`);
  return evaluate;
}

/** `s.matches(re)` through RE2, charged by the length scanned. */
function re2MatchesNode(node: AstNode): EvaluateFn | undefined {
  if (node.op !== 'rcall' || !Array.isArray(node.args)) return undefined;
  const [name, receiver, args] = node.args as [unknown, AstNode, AstNode[]];
  if (name !== 'matches' || !Array.isArray(args) || args.length !== 1) return undefined;
  // A constant pattern RE2 rejects is a compile error, as in cel-go.
  if (args[0].op === 'value' && typeof args[0].args === 'string') {
    try {
      checkRe2Pattern(args[0].args);
    } catch (err) {
      throw new CelCompileError(`compilation failed: ${(err as Error).message}`);
    }
  }
  return (ev, _ast, ctx) => {
    const text = ev.run(receiver, ctx);
    const pattern = ev.run(args[0], ctx);
    if (typeof text !== 'string' || typeof pattern !== 'string') {
      throw new Error(`no such overload: ${typeof text}.matches(${typeof pattern})`);
    }
    charge(1 + Math.ceil(text.length / 10));
    return re2Matches(text, pattern);
  };
}

function instrument(root: AstNode): void {
  for (const node of collectNodes(root)) {
    const inner = re2MatchesNode(node) ?? resolveEvaluate(node);
    node.evaluate = function (this: unknown, ev, ast, ctx) {
      charge(1);
      return inner.call(this, ev, ast, ctx);
    };
  }
}

function usesVariable(root: AstNode, name: string): boolean {
  return collectNodes(root).some((n) => n.op === 'id' && n.args === name);
}

export interface CompiledRule {
  readonly source: string;
  /** True for transition rules: they run only on UPDATE, where an old value exists. */
  readonly usesOldSelf: boolean;
  /** What the rule reads of `self` and `oldSelf` (src/cel/reads.ts): a request converts only that. */
  readonly selfReads: Reads;
  readonly oldSelfReads: Reads;
  evaluate(vars: Record<string, unknown>, meter: CostMeter): unknown;
}

/** Parses, type-checks and instruments one rule; throws CelCompileError naming the position. */
export function compileRule(env: Environment, source: string): CompiledRule {
  let program: ReturnType<Environment['parse']>;
  try {
    program = env.parse(source);
  } catch (err) {
    throw new CelCompileError(`compilation failed: ${(err as Error).message}`);
  }
  const checked = program.check();
  if (!checked.valid) throw new CelCompileError(`compilation failed: ${checked.error?.message ?? 'invalid'}`);
  const ast = program.ast as unknown as AstNode;
  instrument(ast);
  return {
    source,
    usesOldSelf: usesVariable(ast, 'oldSelf'),
    selfReads: readsOf(ast, 'self'),
    oldSelfReads: readsOf(ast, 'oldSelf'),
    evaluate: (vars, meter) => withMeter(meter, () => program(vars)),
  };
}
