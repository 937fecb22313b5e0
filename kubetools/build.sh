#!/usr/bin/env bash
# Builds one of the Kubernetes client tools the project pins, into a cache directory keyed by its version, once per
# machine (static, -trimpath, niced, as controlplane/go/build.sh builds the control plane):
#   kubectl   from kubetools/go: k8s.io/kubernetes/cmd/kubectl at the control plane's release (written by
#             `controlplane/go/pin.py <release> kubetools`), so the client and the API server it talks to match
#   helm      `go install` of Helm's own module at $HELM (Helm 4: the chart's tests use its server-side apply)
# The Go checksum database vouches for the modules. Usage: kubetools/build.sh kubectl|helm
# Prints the binary's path on its last line of stdout; progress goes to stderr; exits 2 without Go and no earlier build.
#   POOLBOY_KUBETOOLS_CACHE=dir   where the builds are kept (default ~/.cache/poolboy/kubetools)
set -euo pipefail
cd "$(dirname "$0")"
say() { printf '[kubetools] %s\n' "$*" >&2; }

HELM=v4.3.2
tool="${1:-}"
kubernetes="$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go/go.mod)"
case "$tool" in
  kubectl) version="$kubernetes"; key="kubectl-$kubernetes-$(cat go/go.mod go/go.sum | sha256sum | cut -c1-12)" ;;
  helm) version="$HELM"; key="helm-$HELM" ;;
  *) say "usage: kubetools/build.sh kubectl|helm"; exit 1 ;;
esac
root="${POOLBOY_KUBETOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolboy/kubetools}"
out="$root/$key"

if [ -x "$out/$tool" ]; then echo "$out/$tool"; exit 0; fi  # built before: nothing to do, with or without Go
command -v go >/dev/null 2>&1 || { say "Go is not installed: install Go 1.26 or newer (https://go.dev/doc/install)"; exit 2; }

# each tool's compiled packages go to a build cache of its own, removed once it is built: only the binary stays
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOCACHE="$root/go-build-$tool"
mkdir -p "$out"
exec 9>"$root/.build-$tool.lock"  # one build of a tool at a time per machine: the others wait for it
flock 9
if [ ! -x "$out/$tool" ]; then
  say "building $tool $version from its Go module into $out; the first build takes a few minutes"
  start=$SECONDS
  case "$tool" in
    kubectl)
      minor="${kubernetes#v1.}"; minor="${minor%%.*}"
      stamp="-X k8s.io/component-base/version.gitVersion=$kubernetes -X k8s.io/component-base/version.gitMajor=1"
      stamp="$stamp -X k8s.io/component-base/version.gitMinor=$minor"
      stamp="$stamp -X k8s.io/component-base/version.gitTreeState=clean"
      (cd go && nice -n 10 go build -trimpath -ldflags "-s -w $stamp" -o "$out/kubectl.partial" \
        k8s.io/kubernetes/cmd/kubectl) ;;
    helm)
      stamp="-X helm.sh/helm/v4/internal/version.version=$HELM -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
      GOBIN="$out/.install" nice -n 10 go install -trimpath -ldflags "-s -w $stamp" "helm.sh/helm/v4/cmd/helm@$HELM"
      mv "$out/.install/helm" "$out/helm.partial" ;;
  esac
  mv "$out/$tool.partial" "$out/$tool"
  rm -rf "$GOCACHE" "$out/.install"
  say "built $tool in $((SECONDS - start)) s"
fi
echo "$out/$tool"
