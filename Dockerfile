# syntax=docker/dockerfile:1
#
# The kruntimes-console image: one static-asset-embedding Rust binary on a
# distroless base, running as the non-root user 65532.
#
#   docker build -t kruntimes-console:0.1.0 \
#     --build-arg KRUNTIMES_BUILD=$(git rev-parse --short=12 HEAD) .
#
# The chart runs it with a read-only root filesystem and the flags rendered
# by chart/templates/deployment.yaml.

# The web UI (React + TypeScript, built with Vite into console/web/dist).
FROM node:22-bookworm-slim AS web
ARG KRUNTIMES_BUILD=""
ARG KRUNTIMES_VERSION=""
ENV KRUNTIMES_BUILD=${KRUNTIMES_BUILD} KRUNTIMES_VERSION=${KRUNTIMES_VERSION}
WORKDIR /src/console/web
COPY console/web/package.json console/web/package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund --loglevel=error
COPY console/web/ ./
RUN npm run build

# The binary, with the web build embedded by console/build.rs.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# Build settings: mimalloc's lazily committed arenas, and the build
# directory under CARGO_HOME (cached below with the target directory).
COPY .cargo/ .cargo/
COPY core/ core/
COPY transport/ transport/
COPY apiserver/ apiserver/
COPY console/ console/
COPY dashboard/ dashboard/
COPY kruntimes-console/ kruntimes-console/
COPY tests/ tests/
COPY bench/ bench/
COPY --from=web /src/console/web/dist/ console/web/dist/
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/usr/local/cargo/build \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kruntimes-console \
    && install -D -m 0755 target/release/kruntimes-console /out/kruntimes-console

# glibc and libgcc only; no shell, no package manager.
FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="kruntimes-console" \
      org.opencontainers.image.description="The kruntimes Console: Run-log aggregated API, web UI and /v1 Runtime access" \
      org.opencontainers.image.source="https://github.com/kruntimes/kruntimes-console" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/kruntimes-console /usr/local/bin/kruntimes-console
USER 65532:65532
# 8443 aggregated API, 9443 Console (UI, /api, /v1), 9090 admin (/metrics, /live, /ready).
EXPOSE 8443 9443 9090
ENTRYPOINT ["/usr/local/bin/kruntimes-console"]
