#!/bin/sh
# Entrypoint of the memhub image.
#
#   docker run IMAGE                      -> memhub serve --host 0.0.0.0   (the hub)
#   docker run IMAGE serve --port 6000    -> memhub serve --host 0.0.0.0 --port 6000
#   docker run IMAGE --log-level debug    -> the same: leading flags go to `memhub serve`
#   docker run IMAGE bridge --hub hub:50051 --transport http --host 0.0.0.0 ...
#                                         -> memhub bridge ...              (one agent's MCP bridge)
#   docker run IMAGE token issue ...      -> memhub token issue ...         (any other memhub command)
#   docker run IMAGE sh                   -> sh                             (anything else runs as given)
#
# The hub never runs open. In a container it also refuses to invent a signing
# key in its data volume: give it one (MEMHUB_JWT_SECRET_FILE, a mounted secret;
# or MEMHUB_JWT_PUBLIC_KEYS / MEMHUB_JWKS_FILE). For a throwaway single-container
# trial, MEMHUB_ALLOW_LOCAL_SECRET=1 lets it create <data dir>/jwt-secret as it
# does outside containers.
set -eu

serve() {
    for arg in "$@"; do
        case "$arg" in -h | --help) exec memhub serve "$@" ;; esac
    done
    if [ -z "${MEMHUB_JWT_SECRET_FILE:-}" ] && [ -z "${MEMHUB_JWT_PUBLIC_KEYS:-}" ] && [ -z "${MEMHUB_JWKS_FILE:-}" ] \
        && [ "${MEMHUB_ALLOW_LOCAL_SECRET:-0}" != "1" ]; then
        echo "memhub: refusing to start without a token key: mount a secret holding at least 32 random" \
            "characters and set MEMHUB_JWT_SECRET_FILE to its path (or set MEMHUB_JWT_PUBLIC_KEYS or" \
            "MEMHUB_JWKS_FILE). For a throwaway trial, MEMHUB_ALLOW_LOCAL_SECRET=1 creates one in the data volume." >&2
        exit 64
    fi
    exec memhub serve --host "${MEMHUB_HOST:-0.0.0.0}" "$@"
}

if [ "$#" -eq 0 ]; then
    serve
fi

case "$1" in
    serve)
        shift
        serve "$@"
        ;;
    -*)
        serve "$@"
        ;;
    bridge | write | search | get | list | forget | import | reindex | token | audit | admin | policy)
        exec memhub "$@"
        ;;
    *)
        exec "$@"
        ;;
esac
