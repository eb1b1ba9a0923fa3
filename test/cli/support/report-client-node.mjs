// Loaded with --import: registers a resolve hook that writes one line to stderr whenever a module
// of the project imports @kubernetes/client-node (test/cli/lazy-imports.test.ts).
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`export async function resolve(specifier, context, next) {
  if (specifier === '@kubernetes/client-node') process.stderr.write('CLIENT-NODE-LOADED by ' + context.parentURL + '\\n');
  return next(specifier, context);
}`),
);
