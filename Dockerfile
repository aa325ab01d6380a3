# Node 22 LTS; better-sqlite3 builds from source when no prebuilt binary fits.
FROM node:22-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production DATA_DIR=/data PORT=8080 HOST=0.0.0.0
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY packages ./packages
COPY scripts ./scripts
# The service as one bundled file (scripts/build.mjs): a restart opens its port in about 60 % of the
# time loading the sources through tsx takes. src/ stays for the CLIs (`npm run keys`, …).
RUN node scripts/build.mjs
EXPOSE 8080
# Run node directly (not npm) so SIGTERM reaches the service and it shuts down cleanly.
CMD ["node", "--enable-source-maps", "--max-semi-space-size=32", "dist/app/main.mjs"]
