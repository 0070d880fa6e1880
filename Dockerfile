# Multi-stage build: compile with the committed .sqlx/ data (no database
# needed), run as a non-root user on a slim image.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
ENV SQLX_OFFLINE=true
RUN cargo build --release --locked && strip target/release/coordinator

FROM debian:bookworm-slim
# ca-certificates follows Debian's security updates, so it is not pinned
# (hadolint DL3008 is ignored for it in scripts/validate-deploy.sh).
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 coordinator \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent coordinator
COPY --from=build /src/target/release/coordinator /usr/local/bin/coordinator
# Numeric, so Kubernetes can verify runAsNonRoot (deploy/k8s uses the same ids).
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["coordinator"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
