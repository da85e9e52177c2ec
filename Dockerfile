# plan-ledger worker / CLI image
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY bin ./bin
COPY scripts ./scripts
COPY console ./console
COPY src ./src
COPY migrations ./migrations
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app /app
USER node
ENTRYPOINT ["node", "bin/plan-ledger.js"]
CMD ["worker"]
