// Loaded with --import: registers a resolve hook that writes one line to stderr whenever a module
// of the project imports one of the packages that are costly at start-up (test/cli/lazy-imports.test.ts):
// "CLIENT-NODE-LOADED", "YAML-LOADED", "X509-LOADED".
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`const WATCHED = { '@kubernetes/client-node': 'CLIENT-NODE', yaml: 'YAML', '@peculiar/x509': 'X509' };
export async function resolve(specifier, context, next) {
  const tag = WATCHED[specifier];
  if (tag && !context.parentURL?.includes('/node_modules/')) process.stderr.write(tag + '-LOADED by ' + context.parentURL + '\\n');
  return next(specifier, context);
}`),
);
