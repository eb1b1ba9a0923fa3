// What a compiled rule reads of a variable (`self`, `oldSelf`), found in its AST once at start-up,
// so that a request converts only that (src/cel/values.ts toCelView) and not every field of both
// objects: the table's numNodes rows read four scalars and the status conditions, the CRD's root
// rules metadata.name, where converting the whole objects was most of their cost.
//
// A read is a chain of constant field selections from the variable (`self.spec.trainer.numNodes`,
// `self.?a.b`, the chain inside `has(self.status.conditions)`). A chain ends where its value is
// used in any other way (an operand, a receiver, an index, a macro's range, the whole rule): there
// the value is read whole. Selections on a map depend only on the selected key (cel-js fieldAccess
// and has() look up own keys one at a time), so a view holding, along each chain, the selected
// keys that exist and, at each chain's end, the whole value, evaluates as the whole value does.

/** The whole value is read. */
export const WHOLE = 'whole' as const;

/** Selected fields, each read whole or further selected; an empty map reads nothing but the value's presence. */
export type Reads = typeof WHOLE | ReadonlyMap<string, Reads>;

/** Nothing is read (the variable does not occur). */
export const NOTHING: Reads = new Map();

interface AstNode {
  op: string;
  args: unknown;
  meta: { alternate?: unknown; macro?: unknown };
}

function isAstNode(v: unknown): v is AstNode {
  return typeof v === 'object' && v !== null && 'op' in v && 'meta' in v;
}

/**
 * Every AST node with each of its parents: the node objects cel-js shares between args, macros and
 * alternates count once per parent.
 */
function parentsOf(root: unknown): Map<AstNode, AstNode[]> {
  const parents = new Map<AstNode, AstNode[]>();
  const seen = new Set<unknown>();
  const visit = (v: unknown, parent: AstNode | undefined): void => {
    if (typeof v !== 'object' || v === null) return;
    if (isAstNode(v)) {
      let list = parents.get(v);
      if (list === undefined) parents.set(v, (list = []));
      if (parent !== undefined && !list.includes(parent)) list.push(parent);
      if (seen.has(v)) return;
      seen.add(v);
      visit(v.args, v);
      visit(v.meta.alternate, v);
      visit(v.meta.macro, v);
      return;
    }
    // Arrays and the plain objects that hold nodes (macro descriptions) pass their parent on.
    if (seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) for (const x of v) visit(x, parent);
    // macroHasProps (set by has()'s type check) lists again the nodes of its argument's chain.
    else
      for (const key of Object.keys(v)) if (key !== 'macroHasProps') visit((v as Record<string, unknown>)[key], parent);
  };
  visit(root, undefined);
  return parents;
}

/** `node` is the receiver of a constant field selection `parent` (`.` or `.?`): its field, else undefined. */
function selectedField(parent: AstNode, node: AstNode): string | undefined {
  if (parent.op !== '.' && parent.op !== '.?') return undefined;
  const args = parent.args;
  if (!Array.isArray(args) || args.length !== 2 || args[0] !== node || typeof args[1] !== 'string') return undefined;
  return args[1];
}

/** The has() macro's node (`call` with a macro that walks a chain of selections) that owns `node` as its argument. */
function isHasOf(parent: AstNode, node: AstNode): boolean {
  const macro = parent.meta.macro as { macroHasProps?: unknown[] } | undefined;
  return parent.op === 'call' && Array.isArray(macro?.macroHasProps) && macro.macroHasProps[0] === node;
}

type MutableReads = typeof WHOLE | Map<string, MutableReads>;

function merge(into: Map<string, MutableReads>, path: readonly string[], leaf: MutableReads): void {
  let at = into;
  for (let i = 0; i < path.length; i++) {
    const next = at.get(path[i]);
    if (next === WHOLE) return;
    if (i === path.length - 1) {
      if (leaf === WHOLE || next === undefined) at.set(path[i], leaf);
      return;
    }
    if (next === undefined) at.set(path[i], new Map());
    at = at.get(path[i]) as Map<string, MutableReads>;
  }
}

/**
 * What the rule whose AST is `root` reads of `variable`. Unknown shapes read the whole value, so
 * a change in cel-js's AST costs speed, not answers (test/cel/reads.test.ts also pins the shapes).
 */
export function readsOf(root: unknown, variable: string): Reads {
  const parents = parentsOf(root);
  const reads = new Map<string, MutableReads>();
  let whole = false;
  // From each occurrence of the variable, follow the selections upwards; a branch ends where a
  // parent uses the value otherwise (has() reads the presence of its last field: nothing below it).
  const follow = (node: AstNode, path: string[]): void => {
    const ps = parents.get(node) ?? [];
    if (ps.length === 0) {
      if (path.length === 0) whole = true;
      else merge(reads, path, WHOLE);
      return;
    }
    for (const parent of ps) {
      const field = selectedField(parent, node);
      if (field !== undefined) {
        const hasParent = (parents.get(parent) ?? []).find((p) => isHasOf(p, parent));
        // has(x.f): only whether f exists; any other parent of the selection is followed too.
        if (hasParent !== undefined) merge(reads, [...path, field], new Map());
        follow(parent, [...path, field]);
        continue;
      }
      if (isHasOf(parent, node)) continue; // has()'s own view of its argument: handled above
      if (path.length === 0) whole = true;
      else merge(reads, path, WHOLE);
    }
  };
  for (const [node] of parents) if (node.op === 'id' && node.args === variable) follow(node, []);
  if (whole) return WHOLE;
  return reads;
}
