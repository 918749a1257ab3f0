# The liftoff worker (`liftoff worker`) as an image; docker-compose.yml builds it as the liftoff-worker service.
# Two stages: the first compiles src/ into dist/ (`npm run build`, with the development tools), the second runs
# dist/ with the production dependencies only, no tsx and no TypeScript. src/ goes in too: the worker bundles the
# workflow code from src/workflows when it starts, the same bundle the replay tests check. Bookworm (glibc)
# because the Temporal SDK's native core ships prebuilt for glibc on x64 and arm64 (a control host may be arm64,
# like a DGX Spark).
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY scripts/build.sh ./scripts/
COPY src ./src
RUN npm run build

FROM node:20.20.2-bookworm-slim

ENV NODE_ENV=production
# glibc gives each thread that allocates its own malloc arena; the worker's threads (V8, libuv, Temporal's core)
# then hold ~30 MB more than two arenas need (bin/liftoff.js, README Performance).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app

# Dependencies first, so a source change does not reinstall them. Development tools are left out; the optional
# native SSH crypto binding may fail to build here (no compiler), and ssh2 then uses its JavaScript crypto.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
COPY --from=build /app/dist ./dist

# Not root: the worker only needs to read its SSH key and known_hosts, which docker-compose.yml mounts read-only
# under /home/node/.ssh, where a spec's default `~/.ssh/...` paths point. 1000 is the image's `node` user, numeric
# so a runtime can check it is not root. HOME is fixed so those paths hold even when the container runs as another
# uid (LIFTOFF_WORKER_USER in docker-compose.yml) to match the key's owner.
USER 1000:1000
ENV HOME=/home/node

# Healthy only while the Temporal server lists this container's worker among the task queue's pollers.
HEALTHCHECK --interval=30s --timeout=20s --start-period=60s --retries=3 \
  CMD ["node", "dist/worker-healthcheck.js"]

# `docker stop` sends SIGTERM, on which the worker finishes its current workflow tasks before it exits.
CMD ["node", "bin/liftoff.js", "worker"]
