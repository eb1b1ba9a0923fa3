# trainjob-webhook: the webhook and the reconciler sidecar share one image (different args).
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
# The Node version is the one the project runs and tests with (package.json's devDependency
# "node"); bump both together. Pin by digest in your own build if your policy asks for it
# (docker buildx imagetools inspect node:24.21.0-slim).
# test/image/runtime-stage.test.ts reproduces both stages without a Docker engine: keep to
# WORKDIR, COPY, RUN (deps stage), ENV, USER, ENTRYPOINT and CMD.
FROM node:24.21.0-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, without install scripts (none of them has one). Then what Node
# never loads: type declarations and source maps, the type-only @types packages, and the bare-*
# packages (tar-fs and its kin load them only under the Bare runtime, through "bare" export
# conditions; in Node they resolve to node:fs and node:path).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete \
    && rm -rf node_modules/@types node_modules/*/node_modules/@types node_modules/bare-*

FROM node:24.21.0-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
USER 65532:65532
EXPOSE 9443 8081
ENTRYPOINT ["node", "bin/trainjob-webhook.js"]
CMD ["serve", "--cert-dir", "/certs"]
