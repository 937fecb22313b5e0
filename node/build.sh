#!/usr/bin/env bash
# Builds what a Kubernetes node runs, into a cache directory keyed by its versions, once per machine:
#   kubelet, kube-scheduler, kube-proxy   from node/go (the control plane's Kubernetes release, pinned by pin.py)
#   containerd, containerd-shim-runc-v2, ctr   `go install` of containerd's own module at $CONTAINERD
#   coredns                                   `go install` of CoreDNS's own module at $COREDNS
#   runc                                      `go install` of runc's own module at $RUNC, with cgo and seccomp
#                                             (libseccomp-dev): Debian 12's runc 1.1 cannot start containerd 2's
#                                             pod sandboxes on these kernels ("can't get final child's PID")
#   pause                                     node/pause.c, static: the pod sandbox image's one file
# Static Go binaries (CGO_ENABLED=0; runc links libseccomp), -trimpath, niced; the Go checksum database vouches for
# the modules installed by version. The CNI plugins are Debian's (scripts/bootstrap.sh installs them).
# Prints the directory that holds the binaries on its last line of stdout; progress goes to stderr.
#   POOLBOY_NODE_CACHE=dir   where the builds are kept (default ~/.cache/poolboy/node)
set -euo pipefail
cd "$(dirname "$0")"
say() { printf '[node] %s\n' "$*" >&2; }

CONTAINERD=v2.4.2
COREDNS=v1.15.0
RUNC=v1.5.3
version_of() { awk -v m="$1" '$1 == m { print $2 }' go/go.mod; }
kubernetes="$(version_of k8s.io/kubernetes)"
key="kubernetes-$kubernetes-containerd-$CONTAINERD-runc-$RUNC-coredns-$COREDNS-$(cat go/go.mod go/go.sum build.sh pause.c | sha256sum | cut -c1-12)"
root="${POOLBOY_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolboy/node}"
out="$root/$key"
BINARIES=(kubelet kube-scheduler kube-proxy containerd containerd-shim-runc-v2 ctr runc coredns pause)

built() { local binary; for binary in "${BINARIES[@]}"; do [ -x "$out/$binary" ] || return 1; done; }
if built; then echo "$out"; exit 0; fi
command -v go >/dev/null 2>&1 || { say "Go is not installed: install Go 1.26 or newer (https://go.dev/doc/install)"; exit 2; }
command -v gcc >/dev/null 2>&1 && [ -f /usr/include/seccomp.h ] \
  || { say "gcc or libseccomp's headers are missing: apt-get install gcc libc6-dev libseccomp-dev"; exit 2; }

declare -A source=(
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
  [containerd]=github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD
  [containerd-shim-runc-v2]=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD
  [ctr]=github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD
  [coredns]=github.com/coredns/coredns@$COREDNS
  [runc]=github.com/opencontainers/runc@$RUNC
)
minor="${kubernetes#v1.}"; minor="${minor%%.*}"
stamp="-X k8s.io/component-base/version.gitVersion=$kubernetes -X k8s.io/component-base/version.gitMajor=1"
stamp="$stamp -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
containerd_stamp="-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOCACHE="$root/go-build"
mkdir -p "$out"
exec 9>"$root/.build.lock"  # one build at a time per machine
flock 9

build() {  # build <binary>: into $out/<binary>, through a .partial file
  local binary="$1" target="${source[$1]:-}"
  case "$binary" in
    pause) nice -n 10 gcc -static -Os -s -Wall -o "$out/pause.partial" pause.c ;;
    containerd*|ctr) GOBIN="$out/.install" nice -n 10 go install -trimpath -ldflags "-s -w $containerd_stamp" "$target"
       mv "$out/.install/$binary" "$out/$binary.partial" ;;
    coredns) GOBIN="$out/.install" nice -n 10 go install -trimpath -ldflags "-s -w" "$target"
       mv "$out/.install/coredns" "$out/$binary.partial" ;;
    runc) CGO_ENABLED=1 GOBIN="$out/.install" nice -n 10 go install -trimpath -tags seccomp \
         -ldflags "-s -w -X main.version=${RUNC#v}" "$target"
       mv "$out/.install/runc" "$out/$binary.partial" ;;
    *) (cd go && nice -n 10 go build -trimpath -ldflags "-s -w $stamp" -o "$out/$binary.partial" "$target") ;;
  esac
  mv "$out/$binary.partial" "$out/$binary"
}
for binary in "${BINARIES[@]}"; do
  [ -x "$out/$binary" ] && continue
  say "building $binary into $out; the first build takes several minutes"
  start=$SECONDS
  build "$binary"
  say "built $binary in $((SECONDS - start)) s"
done
rm -rf "$GOCACHE" "$out/.install"
echo "$out"
