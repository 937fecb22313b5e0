#!/usr/bin/env bash
# What the deployment checks (tests/deploy) and `poolboy dev --cluster node` use besides kubectl, each from its own
# project's Go module through the Go module proxy (called by `scripts/bootstrap.sh --all`):
#   - .venv/bin/helm: Helm built from its module at the pinned release, once per machine (kubetools/build.sh helm),
#   - .venv/share/compose-spec.json: the compose-spec JSON schema as compose-go (Compose's own Go library, which
#     `docker compose` validates with) embeds it, from its module at $COMPOSE_GO (the Go checksum database vouches
#     for the zip; it lands in the machine's GOMODCACHE and is linked from there).
# Idempotent and silent when both are in place. Exits 2, with one line, where there is no Go and no earlier build.
set -euo pipefail
cd "$(dirname "$0")/.."

COMPOSE_GO=v2.16.2
COMPOSE_SCHEMA=.venv/share/compose-spec.json

say() { printf '[setup] %s\n' "$*" >&2; }
link() {  # link <target> <link>: point <link> at <target> unless it already does
  [ "$(readlink "$2" 2>/dev/null)" = "$1" ] || { mkdir -p "$(dirname "$2")"; ln -sfn "$1" "$2"; }
}

helm="$(kubetools/build.sh helm)" || exit $?   # its progress lines, or why it cannot build, on stderr
link "$helm" .venv/bin/helm

case "$(readlink "$COMPOSE_SCHEMA" 2>/dev/null)" in
  */compose-go/v2@"$COMPOSE_GO"/schema/compose-spec.json) [ -f "$COMPOSE_SCHEMA" ] && exit 0 ;;
esac
command -v go >/dev/null 2>&1 || { say "Go is not installed: the compose-spec schema comes from a Go module"; exit 2; }
start=$SECONDS
download="$(GOFLAGS="" go mod download -json "github.com/compose-spec/compose-go/v2@$COMPOSE_GO")" \
  || { say "could not download compose-go $COMPOSE_GO: $download"; exit 1; }
module="$(.venv/bin/python -c 'import json, sys; print(json.loads(sys.argv[1])["Dir"])' "$download")"
[ -f "$module/schema/compose-spec.json" ] || { say "compose-go $COMPOSE_GO has no schema/compose-spec.json"; exit 1; }
link "$module/schema/compose-spec.json" "$COMPOSE_SCHEMA"
say "compose-spec schema from compose-go $COMPOSE_GO linked into .venv/share ($((SECONDS - start)) s)"
