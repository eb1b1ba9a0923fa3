// One cel-js environment with what Kubernetes CEL adds or defines differently: optionals
// (`self.?a.?b`), optional equality, RE2 `matches()`.
import { Environment } from '@marcbachmann/cel-js';
import { optionalEqual } from './equality.ts';
import { re2Matches } from './re2.ts';

/** Variables a rule may use: `self`/`oldSelf` as in a CRD, and `key` in the per-field table rows. */
export const RULE_VARIABLES = ['self', 'oldSelf', 'key'] as const;

export function createCelEnvironment(): Environment {
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false });
  for (const name of RULE_VARIABLES) env.registerVariable(name, 'dyn');
  // cel-go defines optional == optional; cel-js 8.0.0 does not.
  env.registerOperator('optional<dyn> == optional<dyn>', (a: unknown, b: unknown) => optionalEqual(a, b));
  // The global form of matches(); the receiver form is rewritten to RE2 in compile.ts.
  env.registerFunction('matches(string, string): bool', (s: string, re: string) => re2Matches(s, re));
  return env;
}
