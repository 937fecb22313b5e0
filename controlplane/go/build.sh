#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from this module's pins (go.mod, go.sum) into a cache
# directory keyed by their versions, once per machine: static (CGO_ENABLED=0), -trimpath, niced.
# Prints the directory that holds the three binaries on its last line of stdout; progress goes to stderr.
#   KUBEBUILDER_ASSETS=dir   envtest's convention: use the kube-apiserver and etcd found there, build nothing
#   POOLBOY_CONTROL_PLANE_CACHE=dir   where the builds are kept (default ~/.cache/poolboy/control-plane)
set -euo pipefail
cd "$(dirname "$0")"
say() { printf '[control-plane] %s\n' "$*" >&2; }

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  for binary in kube-apiserver etcd; do
    [ -x "$KUBEBUILDER_ASSETS/$binary" ] || { say "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no $binary"; exit 1; }
  done
  say "using the binaries in KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi
version_of() { awk -v m="$1" '$1 == m { print $2 }' go.mod; }
kubernetes="$(version_of k8s.io/kubernetes)"
etcd="$(version_of go.etcd.io/etcd/server/v3)"
key="kubernetes-$kubernetes-etcd-$etcd-$(cat go.mod go.sum | sha256sum | cut -c1-12)"
root="${POOLBOY_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolboy/control-plane}"
out="$root/$key"

if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ -x "$out/kube-controller-manager" ]; then
  echo "$out"; exit 0  # built before: nothing to do, with or without Go
fi
command -v go >/dev/null 2>&1 || { say "Go is not installed: install Go 1.26 or newer (https://go.dev/doc/install), or set KUBEBUILDER_ASSETS"; exit 2; }

declare -A package=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [etcd]=go.etcd.io/etcd/server/v3
)
minor="${kubernetes#v1.}"; minor="${minor%%.*}"
stamp="-X k8s.io/component-base/version.gitVersion=$kubernetes -X k8s.io/component-base/version.gitMajor=1"
stamp="$stamp -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
# the compiled packages (3.6 GB for these three) go to a build cache of their own, removed once all three are built:
# only the binaries (240 MB) and the downloaded modules (in the machine's GOMODCACHE) stay
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOCACHE="$root/go-build"
mkdir -p "$out"
# one build at a time per machine: test sessions started together wait for the first build instead of racing it
# (two builds share the .partial files and the build cache, which the first to finish removes)
exec 9>"$root/.build.lock"
flock 9
for binary in kube-apiserver etcd kube-controller-manager; do
  if [ -x "$out/$binary" ]; then continue; fi
  say "building $binary ($kubernetes, etcd $etcd) into $out; the first build takes several minutes"
  start=$SECONDS
  nice -n 10 go build -trimpath -ldflags "-s -w $stamp" -o "$out/$binary.partial" "${package[$binary]}"
  mv "$out/$binary.partial" "$out/$binary"
  say "built $binary in $((SECONDS - start)) s"
done
rm -rf "$GOCACHE"
echo "$out"
