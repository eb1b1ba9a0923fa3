// dependency-cruiser: the layer map of src/, enforced. `npm run lint` runs
//   depcruise src test bench hack bin --config .dependency-cruiser.cjs
// A layer is a folder of src/ with its subfolders, except a subfolder that is a layer of its own
// (scale/reads/ is, inside scale/). LAYERS below says what each one is and which
// layers it may import besides itself; each becomes one forbidden rule (layer-<name>) refusing an
// import of any other src/ module. src/cli.ts and src/embedded/ have rules of their own.
// Every import counts: static, `import type` (TypeScript pre-compilation dependencies) and dynamic
// `import('...')`. A layer may only import layers listed above it (checked when this file loads),
// so the map itself has no cycle; no-circular refuses cycles between modules, inside a layer too.
// test/, bench/, hack/ and bin/ may import any of src/; src/ never imports them.
//
// A new folder of src/ needs an entry in LAYERS: until it has one, its modules are refused
// (not-in-layer-map, not-to-unmapped) whichever way they are imported.

/**
 * The modules of layer `name`: `src/<name>/` and its subfolders, less those of a layer nested in it
 * (`scale/reads` is not part of `scale`).
 */
function modulesOf(name) {
  const nested = LAYERS.filter((l) => l.name.startsWith(`${name}/`)).map((l) => l.name.slice(name.length + 1));
  return nested.length > 0 ? `^src/${name}/(?!(${nested.join('|')})/)` : `^src/${name}/`;
}

/**
 * The rule for one layer: from its modules, an import of a src/ module outside the layer
 * itself and outside `mayImport` is an error.
 */
function layer({ name, is, mayImport }) {
  return {
    name: `layer-${name}`,
    comment: `src/${name}/: ${is} May import: ${mayImport.length > 0 ? mayImport.join(', ') : 'nothing of the project'}.`,
    severity: 'error',
    from: { path: modulesOf(name) },
    to: { path: '^src/', pathNot: [modulesOf(name), ...mayImport.map(modulesOf)] },
  };
}

/** The folders of src/ and what each may import besides itself, from the leaves up. */
const LAYERS = [
  {
    name: 'json',
    is: 'exact and lossless JSON parsing, stringifying, plain-object helpers. The leaf.',
    mayImport: [],
  },
  {
    name: 'field',
    is: 'field errors of an admission answer and Go-style value formatting.',
    mayImport: ['json'],
  },
  {
    name: 'io',
    is: 'reading object files (JSON or YAML) and their input errors.',
    mayImport: ['json'],
  },
  {
    name: 'api',
    is: 'the TrainJob/JobSet object types, their shape checks and the names shared with upstream.',
    mayImport: ['json'],
  },
  {
    name: 'crd',
    is: 'the CRD structural schema: load, default, prune, validate, ratchet.',
    mayImport: ['field', 'json'],
  },
  {
    name: 'cel',
    is: 'CEL: the environment, compiling and running the CRD rules and the table rules.',
    mayImport: ['crd', 'field', 'json'],
  },
  {
    name: 'rules',
    is: 'the rule table, the policy and the Validator; rules/generate/ renders the CRD patch and the VAP.',
    mayImport: ['cel', 'crd', 'field', 'json', 'io', 'api'],
  },
  {
    name: 'scale',
    is:
      'the pure judgment of a numNodes change (no I/O): can a rebuild carry it out, the admission around ' +
      'it, the finished rules, the ML-policy table. Both processes ask it; its reads are scale/reads/.',
    mayImport: ['api', 'json'],
  },
  {
    name: 'rebuild',
    is:
      'the pure decision of a JobSet rebuild (no I/O), which the reconciler acts on; ' +
      'rebuild/trainer-jobset/ builds the JobSet Trainer would build.',
    mayImport: ['scale', 'api', 'json', 'field'],
  },
  {
    name: 'handoff',
    is: 'the hint the webhook sends the reconciler: the type both processes share.',
    mayImport: ['api', 'json'],
  },
  {
    name: 'observability',
    is:
      'logging, metrics and the ops server. Nothing of the project but json (it imports nothing ' +
      'today): process/ imports observability/ (signals log), so the reverse would be a cycle.',
    mayImport: ['json'],
  },
  {
    name: 'process',
    is: 'the process: flags (ConfigError), listening, signals.',
    mayImport: ['observability'],
  },
  {
    name: 'cluster',
    is:
      'a Kubernetes API client that knows no domain (kubeconfig, connections, requests, watches, ' +
      'errors); never api, rules, scale, rebuild, webhook or reconciler.',
    mayImport: ['json', 'process'],
  },
  {
    name: 'certs',
    is: 'the serving certificate: authority, key pair, store, rotation, reload, CA bundle injection.',
    mayImport: ['cluster', 'observability', 'json', 'process'],
  },
  {
    name: 'scale/reads',
    is:
      "the webhook's reads for a numNodes change (JobSet, its Jobs, runtime, the reconciler's Lease), " +
      'the ScaleCheck of rules/contract.ts that judges them through scale/, and the warning about the pods.',
    mayImport: ['scale', 'rules', 'api', 'cluster', 'observability', 'field', 'json'],
  },
  {
    name: 'webhook',
    is:
      'the admission server: routes, envelope, defaulting, the CRD follower, the hand-off sender, its ' +
      'config and run. Never the reconciler. It decides through rules/ (which reaches crd/ and cel/), ' +
      'with scale/reads/ wired in to judge a numNodes change against the cluster.',
    mayImport: [
      'rules',
      'scale/reads',
      'handoff',
      'api',
      'cluster',
      'certs',
      'observability',
      'process',
      'field',
      'json',
    ],
  },
  {
    name: 'reconciler',
    is: 'the reconciler: watches, queue, lease, the hand-off server, applying rebuilds. Never the webhook.',
    mayImport: ['rebuild', 'scale', 'handoff', 'api', 'cluster', 'observability', 'process', 'json', 'field'],
  },
  {
    name: 'plugin',
    is:
      'the kubectl plugin (kubectl trainjob scale, status): its pure steps, status view and flags, and its ' +
      "reads and writes with the user's own credentials.",
    mayImport: ['rebuild', 'scale', 'api', 'cluster', 'json'],
  },
  {
    name: 'commands',
    is: 'the CLI commands (serve, review, rules, reconcile, settle, scale, status), each wiring the layers below.',
    mayImport: [
      'plugin',
      'webhook',
      'scale/reads',
      'scale',
      'rebuild',
      'reconciler',
      'rules',
      'io',
      'json',
      'observability',
      'process',
      'cluster',
      'certs',
      'api',
      'crd',
      'field',
    ],
  },
];

for (const [i, { name, mayImport }] of LAYERS.entries()) {
  for (const l of mayImport) {
    if (!LAYERS.slice(0, i).some((above) => above.name === l)) {
      throw new Error(`.dependency-cruiser.cjs: layer ${name} may import ${l}, which is not a layer listed above it`);
    }
  }
}

/** Folders of src/ that hold no code of their own layer (data only: see layer-embedded). */
const DATA = ['embedded'];
/** Matches a module of src/ that is in the layer map. */
const MAPPED = [`^src/(${[...LAYERS.map((l) => l.name), ...DATA].join('|')})/`, '^src/cli\\.ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    // --- the graph as a whole ---------------------------------------------------------------
    {
      name: 'no-circular',
      comment: 'No import cycle of any length, inside a layer or across layers.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves to a file or an installed package (a typo, a moved file, a missing dependency).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'src-not-to-tooling',
      comment:
        'The product (src/) never imports the tests, benchmarks, scripts or the bin wrapper: they import src/, not the reverse.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|hack|bin)/' },
    },
    {
      name: 'src-not-to-dev-dependencies',
      comment:
        'The image installs production dependencies only (npm ci --omit=dev): src/ may use a devDependency for types only.',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'pure-without-io',
      comment:
        'The pure layers (json, field, api, handoff, scale, rebuild) decide from their arguments alone: no Node module ' +
        '(fs, net, timers, http) and no package, so the judgment runs the same in both processes and in tests.',
      severity: 'error',
      from: { path: '^src/(json|field|api|handoff|scale|rebuild)/', pathNot: '^src/scale/reads/' },
      to: { dependencyTypes: ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'not-in-layer-map',
      comment: 'A module of src/ outside the layer map (LAYERS, DATA, cli.ts): add its folder to this file.',
      severity: 'error',
      from: { path: '^src/', pathNot: MAPPED },
      to: {},
    },
    {
      name: 'not-to-unmapped',
      comment:
        'Nothing imports a module of src/ outside the layer map (LAYERS, DATA, cli.ts): add its folder to this file.',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: MAPPED },
    },

    // --- the layers, from the leaves up (LAYERS above) ------------------------------------------
    ...LAYERS.map(layer),
    {
      name: 'layer-embedded',
      comment:
        'src/embedded/: data (the patched CRD written by hack/generate.ts), read at run time from its URL: ' +
        'never imported as a module.',
      severity: 'error',
      from: {},
      to: { path: '^src/embedded/' },
    },
    {
      name: 'layer-cli',
      comment:
        'src/cli.ts: the entry point. May import: commands, process, and of the webhook and the reconciler only their config (usage text).',
      severity: 'error',
      from: { path: '^src/cli\\.ts$' },
      to: {
        path: '^src/',
        pathNot: ['^src/(commands|process)/', '^src/(webhook|reconciler)/(config|usage)\\.ts$'],
      },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    exclude: { path: ['^upstream/', '^dist/'] },
    // Type-only imports are dependencies too (the layer map is about what a module knows).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
