// Request bodies are parsed losslessly (int64 fields such as activeDeadlineSeconds beyond 2^53
// stay exact). Every content type goes through this parser: the API server always sends
// application/json, and a curl user who forgot `-H 'Content-Type: application/json'` gets the
// same answer rather than a 415.
import type { FastifyInstance } from 'fastify';
import { GO_MAX_JSON_DEPTH, JsonDepthError, parseJsonLossless } from '../json/lossless.ts';
import { deeperThanAt } from '../json/nesting-scan.ts';

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

/**
 * Text too deep is refused before it is parsed (json/nesting-scan.ts): parsing 7 MiB of `[` to
 * find it too deep held ~190 MiB. Text shorter than two brackets a level cannot nest that deep
 * (nearly every body), and text the scan passed needs no depth check in the parser.
 */
function parseBody(text: string): unknown {
  if (text.length <= 2 * ADMISSION_MAX_DEPTH) return parseJsonLossless(text, ADMISSION_MAX_DEPTH);
  const at = deeperThanAt(text, ADMISSION_MAX_DEPTH);
  if (at !== -1) throw new JsonDepthError(ADMISSION_MAX_DEPTH, at);
  return parseJsonLossless(text, Number.POSITIVE_INFINITY);
}

export function useLosslessJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (_req: unknown, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseBody(text));
    } catch (err) {
      done(new BodyParseError(`request body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  };
  // The same parser twice: Fastify caches the parser it finds for a named type, but looks for
  // the catch-all again (parsing the Content-Type header) on every request.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser('*', { parseAs: 'string' }, parse);
}
