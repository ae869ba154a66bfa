# The image deploy/kubernetes/seam.yaml runs: the release `seam` binary on a slim
# Node.js base (servers the composition launches with npm or node run beside it),
# serving as an unprivileged user. Build it from the repository's root:
#
#   docker build -t seam:latest .
#
# No container engine runs where seam is tested, so the build itself is not; the
# suite checks what it can without one (tests/image.rs): every path copied here
# exists, the user is not root, and the binary runs as this image runs it.

# --- build: the release binary ------------------------------------------------
FROM rust:1.95-slim-bookworm AS build
# aws-lc-sys (rustls's provider, through rmcp's HTTP client) builds C.
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml ./
COPY src src
COPY engine engine
COPY wire wire
COPY providers providers
RUN cargo build --release --locked --bin seam

# --- run: node for npm-launched servers, seam, no root ------------------------
FROM node:20-bookworm-slim
# curl: the manifest's readiness probe sends the default agent's token with it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
# The servers the shipped composition runs, at the versions seam is tested with
# (scripts/install-peers). Add the ones your composition names here.
RUN npm install --global --no-fund --no-audit @modelcontextprotocol/server-everything@2026.8.31 \
    && npm cache clean --force
COPY --from=build /src/target/release/seam /usr/local/bin/seam
# The user seam runs as, and the folders the manifest mounts over: the
# composition and tokens (read-only), bundled skills, and the workspace.
RUN groupadd --system --gid 10001 seam \
    && useradd --system --uid 10001 --gid seam --home-dir /home/seam --create-home seam \
    && mkdir -p /etc/seam/composition /etc/seam/tokens /etc/seam/skills /workspace \
    && chown seam:seam /workspace
USER 10001:10001
WORKDIR /home/seam
EXPOSE 8931
ENTRYPOINT ["seam"]
CMD ["serve", "/etc/seam/composition/seam.yaml", "--transport", "http", "--listen", "0.0.0.0:8931"]
