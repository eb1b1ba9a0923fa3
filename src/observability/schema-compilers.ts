// Fastify's schema compilers, loaded only by a route that has a schema. Every Fastify instance
// otherwise requires Ajv and fast-json-stringify (with their dependencies: ~110 modules) when it is
// built, though no route of the project's servers declares a schema: they parse and check their
// bodies themselves. About 3 MiB of RSS per process (bench/PROFILE.md, "Memory").
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

const require = createRequire(import.meta.url);

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

type BuildValidator = Required<Factories>['buildValidator'];
type BuildSerializer = Required<Factories>['buildSerializer'];
// One selector per process, as Fastify keeps one per root instance (each caches its compilers).
let validator: BuildValidator | undefined;
let serializer: BuildSerializer | undefined;

/** Fastify's own factories (the ones it would load at once), required on their first call. */
export const LAZY_SCHEMA_COMPILERS: { compilersFactory: Required<Factories> } = {
  compilersFactory: {
    buildValidator: (...args) => (validator ??= (require('@fastify/ajv-compiler') as () => BuildValidator)())(...args),
    buildSerializer: (...args) =>
      (serializer ??= (require('@fastify/fast-json-stringify-compiler') as () => BuildSerializer)())(...args),
  },
};
