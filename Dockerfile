# Multi-stage build: compile with the committed .sqlx/ data (no database
# needed), run as a non-root user on a slim image.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
ENV SQLX_OFFLINE=true
RUN cargo build --release --locked && strip target/release/coordinator

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /nonexistent coordinator
COPY --from=build /src/target/release/coordinator /usr/local/bin/coordinator
USER coordinator
EXPOSE 8080
ENTRYPOINT ["coordinator"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
