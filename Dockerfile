# trainjob-webhook: the webhook and the reconciler sidecar share one image (different args).
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:24-slim
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
