// Request bodies are parsed losslessly (int64 fields such as activeDeadlineSeconds beyond 2^53
// stay exact). Every content type goes through this parser: the API server always sends
// application/json, and a curl user who forgot `-H 'Content-Type: application/json'` gets the
// same answer rather than a 415.
import type { FastifyInstance } from 'fastify';
import { GO_MAX_JSON_DEPTH, parseJsonLossless } from '../json/lossless.ts';

/**
 * The deepest body accepted: the deepest object the API server's decoder accepts (Go's 10,000
 * levels) sits two levels down in an AdmissionReview (`request.object`). Deeper text cannot
 * come from the API server and is refused like Go refuses it ("exceeded max depth").
 */
export const ADMISSION_MAX_DEPTH = GO_MAX_JSON_DEPTH + 2;

export class BodyParseError extends Error {
  override name = 'BodyParseError';
  readonly statusCode = 400;
}

export function useLosslessJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (_req: unknown, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonLossless(text, ADMISSION_MAX_DEPTH));
    } catch (err) {
      done(new BodyParseError(`request body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  };
  // The same parser twice: Fastify caches the parser it finds for a named type, but looks for
  // the catch-all again (parsing the Content-Type header) on every request.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser('*', { parseAs: 'string' }, parse);
}
