# syntax=docker/dockerfile:1
# The gateway as a production image: compiled JavaScript, production dependencies only, a non-root user,
# node as PID 1 (exec form) so SIGTERM reaches the shutdown handler directly.
#
#   docker build -t won-gateway .
#   docker run --rm --stop-timeout 45 -e DATABASE_URL=… -e SESSION_SECRET=… -e KEY_PEPPER=… won-gateway --role=all
#
# --role=all runs every role in one container. The default command, --role=gateway, waits until a
# --role=worker container has prepared the projections (docker-compose.yml runs both). A stop may take SHUTDOWN_DRAIN_MS + 21 s
# (the drain, the cut, the close): docker's default 10 s would kill it before its usage is recorded, so
# give --stop-timeout (compose: stop_grace_period) at least that.
#
# The source is TypeScript with extensionless imports (moduleResolution "Bundler"), which Node cannot load
# as emitted by tsc; esbuild bundles our modules into dist/ and leaves every package external.

ARG NODE_IMAGE=node:20-bookworm-slim

# Everything that compiles: the service bundled by esbuild, the console built by vite (both dev dependencies).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY projections ./projections
COPY workers ./workers
COPY console ./console
RUN npm run build && npm run build:console

FROM ${NODE_IMAGE} AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only: the console's build tools and libraries (vite, react, recharts, …), tsx and
# embedded PostgreSQL (for `npm start` without DATABASE_URL, which the image never does: --role needs
# DATABASE_URL) are devDependencies, used by the build stage and by `npm install && npm start`.
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# Every role serves /health/* on METRICS_PORT (a worker opens no other port), so one probe checks them all; a
# gateway serves /health/* on PORT too, and /metrics (revenue by model, traffic) on METRICS_PORT alone.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    METRICS_PORT=9464
WORKDIR /app
COPY --from=production-dependencies --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/console/dist ./console/dist
COPY --chown=root:root package.json ./
USER node
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=6 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.METRICS_PORT || process.env.PORT || 8080) + '/health/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--enable-source-maps", "dist/main.js"]
CMD ["--role=gateway"]
