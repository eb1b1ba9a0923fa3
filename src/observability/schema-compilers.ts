// Fastify's schema compilers, loaded only by a route that has a schema. Every Fastify instance
// otherwise requires Ajv and fast-json-stringify (with their dependencies: ~110 modules) when it is
// built, though no route of the project's servers declares a schema: they parse and check their
// bodies themselves. About 3 MiB of RSS for a process's two servers (bench/PROFILE.md, "RSS").
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

const require = createRequire(import.meta.url);

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = Required<Factories>['buildValidator'];
type BuildSerializer = Required<Factories>['buildSerializer'];

/**
 * A Fastify instance's `schemaController`: Fastify's own two factories, required on their first
 * call. One pair per instance, as Fastify builds one pair per root instance (each caches what it
 * compiled).
 */
export function lazySchemaCompilers(): { compilersFactory: Required<Factories> } {
  let validator: BuildValidator | undefined;
  let serializer: BuildSerializer | undefined;
  return {
    compilersFactory: {
      buildValidator: (...args) =>
        (validator ??= (require('@fastify/ajv-compiler') as () => BuildValidator)())(...args),
      buildSerializer: (...args) =>
        (serializer ??= (require('@fastify/fast-json-stringify-compiler') as () => BuildSerializer)())(...args),
    },
  };
}
