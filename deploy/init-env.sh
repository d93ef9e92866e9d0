#!/bin/sh
# Write .env for docker-compose.yml from .env.example, with a fresh random value
# for every required secret that is still empty. Never overwrites an existing file.
#
#   deploy/init-env.sh                 # writes ./.env (mode 600) in the repository root
#   deploy/init-env.sh --output FILE   # somewhere else
#
# Values are hex (safe in URLs), from /dev/urandom. Keep the file private and
# out of version control: whoever reads MEMHUB_JWT_SECRET can mint tokens for any agent.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
template="$root/.env.example"
output="$root/.env"
if [ "${1:-}" = "--output" ] && [ -n "${2:-}" ]; then
    output=$2
elif [ "$#" -gt 0 ]; then
    echo "usage: $0 [--output FILE]" >&2
    exit 2
fi
if [ -e "$output" ]; then
    echo "init-env: $output exists; not overwriting it (delete it first to start over)" >&2
    exit 1
fi

# name:bytes of randomness (hex doubles the length). Keep in line with the `:?` variables of docker-compose.yml.
secrets="POSTGRES_PASSWORD:24 MINIO_ACCESS_KEY:12 MINIO_SECRET_KEY:24 MEMHUB_JWT_SECRET:32 MEMHUB_BRIDGE_HTTP_TOKEN:32 MEMHUB_GRAFANA_ADMIN_PASSWORD:16"

random_hex() {
    od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

umask 077
tmp="$output.tmp.$$"
trap 'rm -f "$tmp"' EXIT
cp "$template" "$tmp"
for entry in $secrets; do
    name=${entry%%:*}
    bytes=${entry#*:}
    if grep -q "^$name=\$" "$tmp"; then
        value=$(random_hex "$bytes")
        sed "s/^$name=\$/$name=$value/" "$tmp" > "$tmp.new" && mv "$tmp.new" "$tmp"
    fi
done
mv "$tmp" "$output"
trap - EXIT
echo "init-env: wrote $output (mode 600) with new random secrets; next: docker compose up -d" >&2
