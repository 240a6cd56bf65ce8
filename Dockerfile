# syntax=docker/dockerfile:1
# One image for every app; the command picks which one runs:
#   node dist/apps/gateway/src/main.js        (HTTP on PORT, default 8080)
#   node dist/apps/registry/src/main.js       (health/metrics on METRICS_PORT, default 9464)
#   node dist/apps/chat-worker/src/main.js    (idem)
#   node dist/apps/image-worker/src/main.js   (idem)
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: full dependencies, compile TypeScript into dist/ ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# node-llama-cpp's install step would otherwise try to fetch or compile llama.cpp; its prebuilt
# binaries come as platform packages (@node-llama-cpp/linux-*), as sharp's do (@img/sharp-linux-*).
ENV NODE_LLAMA_CPP_SKIP_DOWNLOAD=true
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY apps ./apps
COPY libs ./libs
RUN npm run build

# ---- runtime: production dependencies and the compiled apps only ----
FROM ${NODE_IMAGE} AS runtime
# GPU builds of llama.cpp (CUDA, Vulkan) add gigabytes; the CPU build is kept unless asked for.
ARG KEEP_GPU_BINARIES=false
# NODE_OPTIONS: V8's young generation as Node 20 and 22 size it (scripts/start/apps.mjs says why); the memory
# limits in deploy/ assume it. Set NODE_OPTIONS yourself to change it.
ENV NODE_ENV=production \
    NODE_LLAMA_CPP_SKIP_DOWNLOAD=true \
    NODE_OPTIONS=--max-semi-space-size=16
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && if [ "$KEEP_GPU_BINARIES" != "true" ]; then \
      rm -rf node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan*; \
    fi \
 && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY deploy/catalog.json ./deploy/catalog.json
# Everything above is owned by root and read-only to the app; it runs as the image's unprivileged user.
# The file store's directory is the one thing it writes: a volume mounted there takes its owner from it.
RUN mkdir -p /data/files && chown node:node /data/files
USER node
EXPOSE 8080 9464
CMD ["node", "dist/apps/gateway/src/main.js"]
