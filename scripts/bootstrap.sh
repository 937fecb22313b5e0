#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian/Ubuntu machine with Python 3.11+, silent and quick when all is in place:
#   scripts/bootstrap.sh         what `./run dev` needs: redis-server, a virtualenv in .venv with the pinned
#                                dependencies (re-installed only when the pins change), the pinned kubectl, and
#                                Prometheus (`./run dev --prometheus-port`)
#   scripts/bootstrap.sh --all   also what `./run tests` and `./run dev --cluster node` need: the test tools
#                                (Chromium among them), helm and the compose-spec schema, the container image's tools,
#                                the real control plane and a node beside it (each built once per machine)
# Each step that does something says what it does and, once done, how long it took. Prints a clear message and exits
# non-zero when something cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

all=false
case "${1:-}" in
  --all) all=true ;;
  "") ;;
  *) printf 'usage: scripts/bootstrap.sh [--all]\n' >&2; exit 1 ;;
esac

said=false
say() { printf '[setup] %s\n' "$*" >&2; said=true; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
begun=$SECONDS

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
if $all; then
  apt_install redis-sentinel redis-sentinel   # the Sentinel failover test (tests/e2e/test_sentinel_failover.py)
  apt_install openssl openssl                 # certificates for the Redis TLS test
  # headless Chromium: the Flower pages test (tests/e2e/test_flower.py) and benchmarks/flower_screenshots.py
  (apt_install chromium chromium) || say "without chromium ./run tests skips the test of Flower's pages"
fi

# kubectl at the control plane's release, built once per machine from its Go module (kubetools/build.sh: about two
# minutes the first time) and linked into .venv/bin, which ./run puts first on PATH: the machine's own kubectl may be
# several releases away from that API server. Without Go the machine's kubectl is what there is. The build runs
# while the dependencies below download (it uses the CPU, they mostly the network); it prints its own lines.
kubectl_build="" kubectl_path="$(mktemp)"
trap 'rm -f "$kubectl_path"' EXIT
if command -v go >/dev/null 2>&1; then
  kubetools/build.sh kubectl > "$kubectl_path" &
  kubectl_build=$!
fi

pip_progress() {
  # pip's output on stdin reduced to a line a phase (collecting, installing, installed) and a line every 10 s while a
  # phase lasts (pip says nothing while it installs); its errors, and what follows them, as they are
  local begun=$SECONDS last=$SECONDS collected=0 phase=collecting line="" pending="" failed=false installed status
  while true; do
    status=0; IFS= read -r -t 1 line || status=$?
    if [ "$status" -gt 128 ]; then  # a second without a whole line: keep what came of it
      pending="$pending$line"
      if ! $failed && [ $((SECONDS - last)) -ge 10 ]; then
        if [ $phase = collecting ]; then say "  $collected packages collected so far ($((SECONDS - begun)) s)"
        else say "  still installing ($((SECONDS - begun)) s)"; fi
        last=$SECONDS
      fi
      continue
    fi
    [ "$status" -eq 0 ] || break  # the end of pip's output
    line="$pending$line"; pending=""
    if $failed; then printf '%s\n' "$line" >&2; continue; fi
    case "$line" in
      Collecting\ *)
        collected=$((collected + 1))
        if [ $((SECONDS - last)) -ge 10 ]; then
          say "  $collected packages collected so far ($((SECONDS - begun)) s)"; last=$SECONDS
        fi ;;
      "Installing collected packages: "*)
        say "  $collected packages collected in $((SECONDS - begun)) s; installing them into .venv"
        phase=installing begun=$SECONDS last=$SECONDS ;;
      "Successfully installed "*)
        read -ra installed <<< "${line#Successfully installed }"
        say "  ${#installed[@]} packages installed in $((SECONDS - begun)) s" ;;
      ERROR:*|error:*) failed=true; printf '%s\n' "$line" >&2 ;;
    esac
  done
}

pip_install() {  # pip_install <pip install arguments...>: quiet but for pip_progress's lines
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off "$@" 2>&1 | pip_progress
}

if [ ! -x .venv/bin/python ]; then
  step=$SECONDS
  "$PYTHON" -m venv .venv || die "python venv failed; on Debian install python3-venv"
  say "created the virtualenv .venv ($((SECONDS - step)) s)"
fi
installed_dependencies=false
stamp=".venv/.requirements.sha256"
want="$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step=$SECONDS
  say "installing the pinned dependencies (requirements-dev.txt and what they need; about a minute the first time)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  pip_install -r requirements-dev.txt || true
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e . 2>&1 \
    | grep -v '^WARNING: Location' >&2 || true
  # packages an older pin set installed and the code must not load (rfc3987-syntax: 1.5 s at import; see
  # requirements.txt); pip never removes what a requirement no longer asks for
  .venv/bin/python -m pip uninstall -q -y rfc3987-syntax lark isoduration arrow uri-template webcolors >/dev/null 2>&1 || true
  .venv/bin/python -c 'import celery, kubernetes, jinja2, aiohttp, redis' \
    || die "dependency installation failed; see the pip output above"
  echo "$want" > "$stamp"
  installed_dependencies=true
  say "the pinned dependencies are installed ($((SECONDS - step)) s)"
fi

link() {  # link <target> <link>: point <link> at <target> unless it already does
  [ "$(readlink "$2" 2>/dev/null)" = "$1" ] || ln -sfn "$1" "$2"
}

# kubectl's build (started above) is waited for here
if [ -n "$kubectl_build" ]; then
  # after the dependencies' install, a build still running is a first one (a built kubectl is found in milliseconds)
  if $installed_dependencies && kill -0 "$kubectl_build" 2>/dev/null; then say "waiting for kubectl's build"; fi
  wait "$kubectl_build" || die "building kubectl failed (kubetools/build.sh kubectl; its output is above)"
  kubectl="$(tail -n 1 "$kubectl_path")"
else
  kubectl="$(kubetools/build.sh kubectl 2>/dev/null)" || kubectl=""  # without Go only an earlier build can be found
fi
if [ -n "$kubectl" ]; then
  link "$kubectl" .venv/bin/kubectl
elif ! command -v kubectl >/dev/null 2>&1; then
  say "kubectl is missing: install Go 1.26 or newer (https://go.dev/doc/install) to build it, or kubectl itself"
fi

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

finish() {  # the closing line, when set-up said anything
  if $said; then say "set-up done in $((SECONDS - begun)) s"; fi
}
$all || { finish; exit 0; }

# The container image's daemonless build and its smoke test (scripts/build-image.sh, tests/deploy/test_image.py),
# from the distribution's packages. Without them the rest still works, and ./run tests skips those tests (CI fails).
for tool in mmdebstrap=mmdebstrap buildah=buildah umoci=umoci skopeo=skopeo bwrap=bubblewrap; do
  (apt_install "${tool%%=*}" "${tool#*=}") || say "without ${tool#*=} ./run tests skips the container image tests"
done

# helm and the compose-spec schema, from their Go modules (see the script); without Go the checks that use them skip.
deploy_status=0
scripts/deploy-tools.sh || deploy_status=$?
if [ "$deploy_status" -eq 2 ]; then
  say "without helm and the compose-spec schema ./run tests skips the checks that use them"
elif [ "$deploy_status" -ne 0 ]; then
  die "installing helm or the compose-spec schema failed (scripts/deploy-tools.sh, status $deploy_status)"
fi

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
finish
