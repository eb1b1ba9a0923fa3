// Request bodies are parsed losslessly (int64 fields such as activeDeadlineSeconds beyond 2^53
// stay exact). Every content type goes through this parser: the API server always sends
// application/json, and a curl user who forgot `-H 'Content-Type: application/json'` gets the
// same answer rather than a 415. Before a body is parsed it is read once (json/nesting-scan.ts):
// text nested too deep is refused there (parsing it first held ~190 MiB for 7 MiB of `[`), and
// its weight is taken from the decision budget (decision-budget.ts) until its answer is sent.
// Text too deep whose envelope (apiVersion, kind, request.uid) can be read from the text
// (envelope-scan.ts) is an AdmissionReview all the same: it is handed on as an UndecodableReview,
// answered in-band with code 400. Any other text too deep, or not JSON, gets HTTP 400.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GO_MAX_JSON_DEPTH, JsonDepthError, parseJsonLossless } from '../json/lossless.ts';
import { scanJsonText, type TextShape } from '../json/nesting-scan.ts';
import { LIGHT_BODY_BYTES } from './body-budget.ts';
import { DecisionBudget, decisionWeight, holdUntilDone, LIGHT_WEIGHT } from './decision-budget.ts';
import { HeavyTurns } from './heavy-turns.ts';
import { knownEnvelope, UndecodableReview } from './envelope.ts';
import { scanEnvelope } from './envelope-scan.ts';

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

/** A body whose client closed its connection before the body was decided (nginx's 499). */
export class ClientGone extends Error {
  override name = 'ClientGone';
  readonly statusCode = 499;
  constructor() {
    super('the client closed its connection before its request was decided');
  }
}

/** The response of a request, kept on it by the preParsing hook: the parser has no reply. */
const responseOf = Symbol('responseOf');
type WithResponse = FastifyRequest & { [responseOf]?: ServerResponse };

/**
 * Bodies up to this size are not scanned: they cannot nest too deep (two brackets a level), and
 * their weight is taken at its bound (a value takes at least two characters), which stays light.
 * Scanning an ordinary 6 KB review cost ~16 µs, about as much as parsing it.
 */
const UNSCANNED_CHARS = 8 * 1024;

function shapeOf(text: string): TextShape {
  if (text.length <= UNSCANNED_CHARS) return { tooDeepAt: -1, tokens: Math.ceil(text.length / 2) };
  return scanJsonText(text, ADMISSION_MAX_DEPTH);
}

/** Parses text the scan found within the depth bound: the parser need not check it again. */
function parseScanned(text: string, done: (err: Error | null, body?: unknown) => void): void {
  let body: unknown;
  try {
    body = parseJsonLossless(text, Number.POSITIVE_INFINITY);
  } catch (err) {
    return done(new BodyParseError(`request body is not valid JSON: ${(err as Error).message}`), undefined);
  }
  done(null, body);
}

export function useLosslessJsonBodies(app: FastifyInstance, budget: DecisionBudget): void {
  app.removeAllContentTypeParsers();
  const turns = new HeavyTurns();
  app.addHook('preParsing', (request, reply, payload, done) => {
    (request as WithResponse)[responseOf] = reply.raw;
    done(null, payload);
  });
  const parse = (
    req: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, body?: unknown) => void,
  ): void => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    const shape = shapeOf(text);
    if (shape.tooDeepAt !== -1) {
      const err = new JsonDepthError(ADMISSION_MAX_DEPTH, shape.tooDeepAt);
      const message = `request body is not valid JSON: ${err.message}`;
      const envelope = scanEnvelope(text);
      const review = envelope && knownEnvelope(envelope);
      if (review) return done(null, new UndecodableReview(review, message));
      return done(new BodyParseError(message), undefined);
    }
    const weight = decisionWeight(text.length, shape.tokens);
    const res = (req as WithResponse)[responseOf];
    const decide = (): void => {
      // Its client left while it waited for its turn: nothing to decide for.
      if (res?.destroyed) {
        budget.give(weight);
        return done(new ClientGone(), undefined);
      }
      if (res) holdUntilDone(budget, res, weight);
      else budget.give(weight);
      parseScanned(text, done);
    };
    // Heavy bodies are parsed and decided one per turn of the event loop (heavy-turns.ts).
    const start = weight > LIGHT_WEIGHT ? () => turns.run(decide) : decide;
    // A body the byte budget held may wait for room: what waits is bounded there, as long as its
    // client stays (the byte budget lets go of a body whose client left), so a wait ends with it.
    const taken = budget.take(weight, text.length > LIGHT_BODY_BYTES, start);
    if (taken === undefined) start();
    else if (taken === 'waiting') res?.once('close', () => budget.withdraw(start) && done(new ClientGone(), undefined));
    else done(taken, undefined);
  };
  // The same parser twice: Fastify caches the parser it finds for a named type, but looks for
  // the catch-all again (parsing the Content-Type header) on every request.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser('*', { parseAs: 'string' }, parse);
}
