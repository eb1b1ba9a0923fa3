# trainjob-webhook: the webhook and the reconciler sidecar share one image (different args).
# The image runs JavaScript compiled from the TypeScript sources (`npm run build`, tsconfig.build.json):
# Node then loads no type stripper, which saves ~17 MiB of RSS and start-up time (bench/PROFILE.md,
# "Memory").
# The Node version is the one the project runs and tests with (package.json's devDependency
# "node"); bump both together. Pin by digest in your own build if your policy asks for it
# (docker buildx imagetools inspect node:24.21.0-slim).
# test/image/runtime-stage.test.ts reproduces the stages without a Docker engine: keep to
# WORKDIR, COPY, RUN (build stage), ENV, USER, ENTRYPOINT and CMD.
FROM node:24.21.0-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
# Every dependency from the lockfile, the compiler included, without install scripts (none of the
# production ones has one; so the "node" dev dependency does not download a second Node).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY bin ./bin
COPY src ./src
# Compile (dist/bin, dist/src), then keep the production dependencies only, without what Node
# never loads: type declarations and source maps, the type-only @types packages, and the bare-*
# packages (tar-fs and its kin load them only under the Bare runtime, through "bare" export
# conditions; in Node they resolve to node:fs and node:path).
RUN npm run build \
    && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
    && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete \
    && rm -rf node_modules/@types node_modules/*/node_modules/@types node_modules/bare-* \
    && find node_modules -type d -empty -delete

FROM node:24.21.0-slim
WORKDIR /app
ENV NODE_ENV=production
# V8's young generation: on a large node Node lets each semi-space grow to 64 MiB, and a webhook
# under load keeps 128 MiB of new space committed while its live heap is 20-50 MiB. 8 MiB took the
# offline serve's RSS after load from ~245 to ~150 MiB at no measured cost in requests/s; 2 MiB
# cost 15-30 % (bench/history/2026-12-01-issue-10.md, "Footprint"). The old generation is capped at
# 256 MiB: under a flood of hostile reviews V8 otherwise grows the heap towards the container's 512Mi
# limit before it collects (bench/history/2026-12-03-issue-18.md, "Hostile flood"); the webhook's
# budgets keep its decisions within it.
# The reconciler's heap grows with the TrainJobs, JobSets and Jobs it watches: its container sets
# its own NODE_OPTIONS (--max-semi-space-size=8 alone), which replaces this one.
ENV NODE_OPTIONS="--max-semi-space-size=8 --max-old-space-size=256"
COPY --from=build /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist/bin ./bin
COPY --from=build /app/dist/src ./src
USER 65532:65532
EXPOSE 9443 8081
ENTRYPOINT ["node", "bin/trainjob-webhook.js"]
CMD ["serve", "--cert-dir", "/certs"]
