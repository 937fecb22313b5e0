#!/usr/bin/env bash
# Builds what a node's addons run (node/metrics.py), into a cache directory keyed by their versions, once per
# machine, apart from node/build.sh so that pinning an addon does not rebuild the node itself:
#   metrics-server   `go install` of its own module at $METRICS_SERVER (its go.mod may want a newer Go than the
#                    machine's: GOTOOLCHAIN=auto fetches that toolchain through the Go module proxy)
#   kube-router      `go install` of its own module at $KUBE_ROUTER: its network policy controller only
#                    (node/network_policy.py)
# Static Go binaries (CGO_ENABLED=0), -trimpath, niced; the Go checksum database vouches for the modules.
# Prints the directory that holds the binaries on its last line of stdout; progress goes to stderr.
#   POOLBOY_NODE_CACHE=dir   where the builds are kept (default ~/.cache/poolboy/node)
set -euo pipefail
cd "$(dirname "$0")"
say() { printf '[node addons] %s\n' "$*" >&2; }

METRICS_SERVER=v0.9.1
KUBE_ROUTER=v2.1.0
key="addons-metrics-server-$METRICS_SERVER-kube-router-$KUBE_ROUTER-$(sha256sum < build-addons.sh | cut -c1-12)"
root="${POOLBOY_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolboy/node}"
out="$root/$key"
BINARIES=(metrics-server kube-router)

built() { local binary; for binary in "${BINARIES[@]}"; do [ -x "$out/$binary" ] || return 1; done; }
if built; then echo "$out"; exit 0; fi
command -v go >/dev/null 2>&1 || { say "Go is not installed: install Go 1.26 or newer (https://go.dev/doc/install)"; exit 2; }

declare -A source=(
  [metrics-server]=sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER
  [kube-router]=github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER
)
declare -A version=([metrics-server]=$METRICS_SERVER [kube-router]=$KUBE_ROUTER)
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOCACHE="$root/go-build-addons" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
mkdir -p "$out"
exec 9>"$root/.build-addons.lock"  # one build at a time per machine
flock 9

for binary in "${BINARIES[@]}"; do
  [ -x "$out/$binary" ] && continue
  say "building $binary into $out; the first build takes a few minutes"
  start=$SECONDS
  GOBIN="$out/.install" nice -n 10 go install -trimpath \
    -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=${version[$binary]}" "${source[$binary]}"
  mv "$out/.install/$binary" "$out/$binary.partial"
  mv "$out/$binary.partial" "$out/$binary"
  say "built $binary in $((SECONDS - start)) s"
done
rm -rf "$GOCACHE" "$out/.install"
echo "$out"
