# The fanscan image that configs/k8s/*.yaml and configs/ci/github/nightly.yml
# run: ghcr.io/your-org/fanscan:latest. Build and push it with
#
#   docker build -t ghcr.io/your-org/fanscan:latest .
#   docker push ghcr.io/your-org/fanscan:latest
#
# Two stages: a Rust builder compiles the release binary from the locked
# dependencies; the runtime is Debian slim with git (for --since) and CA
# certificates (for the providers' HTTPS), running as a non-root user.

FROM rust:1.95-slim-bookworm AS builder
WORKDIR /src
# What the build reads: the manifest and lock file, the sources, the
# configs compiled into the binary, and the benches the manifest names.
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY configs ./configs
COPY benches ./benches
RUN cargo build --release --locked --bin fanscan \
 && ./target/release/fanscan --version

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1001 fanscan \
 && useradd --uid 1001 --gid 1001 --create-home --shell /usr/sbin/nologin fanscan
COPY --from=builder /src/target/release/fanscan /usr/local/bin/fanscan
# Numeric, so that Kubernetes' runAsNonRoot can check it; 1001 is also the
# owner of GitHub's runner workspace, so a container job can write there.
USER 1001:1001
WORKDIR /work
ENTRYPOINT ["fanscan"]
CMD ["--help"]
