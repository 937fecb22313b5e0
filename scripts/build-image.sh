#!/usr/bin/env bash
# Builds the container image the Helm chart runs, without a Docker daemon or a container registry:
#   1. a base like python:3.11-slim from Debian's packages: mmdebstrap bookworm, variant minbase (what
#      debian:bookworm-slim holds), with python3, python3-venv, ca-certificates, netbase and tzdata, no apt lists,
#      caches or docs; a virtualenv /opt/poolboy first on PATH, so the Dockerfile's `pip` installs into it;
#   2. the project's own Dockerfile on top of it: `buildah bud --isolation chroot --layers`, FROM that base through
#      the build-arg BASE_IMAGE, so what is built here is what the Dockerfile says (user, entrypoint, env, layout);
#   3. an OCI image layout in $POOLBOY_IMAGE_CACHE/<hash of the inputs>/oci, reused while the inputs (this script,
#      the Dockerfile, .dockerignore, every COPY source, the base's recipe) are unchanged.
# Prints the image reference (oci:DIR:poolboy-celery) on its last line of stdout; progress and timings go to stderr.
# Exits 2, saying what to install, when a tool is missing. Needs root (buildah and mmdebstrap run unprivileged only
# with subordinate uid ranges, which these machines do not have). Runs niced.
#   POOLBOY_IMAGE_CACHE=dir   where builds are kept (default ~/.cache/poolboy/image)
set -euo pipefail
[ "$(nice)" -ge 10 ] || exec nice -n 10 "$0" "$@"
cd "$(dirname "$0")/.."

say() { printf '[image] %s\n' "$*" >&2; }
unavailable() { say "$*"; exit 2; }

NAME="poolboy-celery"
SUITE="bookworm"
# The base's packages: the interpreter and what python:3.11-slim adds to debian:bookworm-slim.
BASE_PACKAGES="python3,python3-venv,ca-certificates,netbase,tzdata"
ROOT_DIR="${POOLBOY_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolboy/image}"
KEEP=3  # image directories kept; older ones are removed after a build

require_tools() {  # require_tools <binary>=<package> ...: exit 2 naming the packages of the missing ones
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
  done
  [ "${#missing[@]}" -eq 0 ] \
    || unavailable "missing: ${missing[*]} (apt-get install ${missing[*]}; scripts/bootstrap.sh does)"
  [ "$(id -u)" -eq 0 ] || unavailable "building the image needs root (buildah and mmdebstrap without subordinate uids)"
}

apt_sources() {  # a Debian machine's own apt sources, so the base comes from the mirror it is set up for; elsewhere
  # none, and mmdebstrap uses its default mirror of the suite
  local file
  grep -qx 'ID=debian' /etc/os-release 2>/dev/null || return 0
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -s "$file" ] && printf '%s\n' "$file"
  done
  return 0
}

base_recipe() {  # the mmdebstrap arguments of the base, one a line (its cache key is their hash)
  printf '%s\n' --variant=minbase --include="$BASE_PACKAGES" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --skip=output/dev \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --customize-hook='chroot "$1" python3 -m venv /opt/poolboy' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log' \
    "$SUITE"
}

copy_sources() {  # every source path of the Dockerfile's COPY instructions (flags and the destination left out)
  awk 'toupper($1) == "COPY" { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' Dockerfile
}

inputs_hash() {  # the hash of every file the image is built from, by path and content
  local sources
  mapfile -t sources < <(copy_sources)
  { sha256sum scripts/build-image.sh Dockerfile .dockerignore
    find "${sources[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z \
      | xargs -0 sha256sum
    printf '%s\n' "$1"
  } | sha256sum | cut -c1-16
}

storage_driver() {  # overlay, except where the storage itself sits on overlayfs (a container's root)
  if [ "$(findmnt -no FSTYPE --target "$ROOT_DIR" 2>/dev/null)" = "overlay" ]; then echo vfs; else echo overlay; fi
}

timed() {  # timed <what> <command ...>: run it, then say how long it took
  local what="$1" start=$SECONDS
  shift
  "$@"
  say "$what in $((SECONDS - start)) s"
}

logged() {  # logged <command ...>: its output into $ROOT_DIR/build.log, whose end is shown when it fails
  "$@" >>"$ROOT_DIR/build.log" 2>&1 && return 0
  tail -n 30 "$ROOT_DIR/build.log" >&2
  say "failed: $1 (the whole log: $ROOT_DIR/build.log)"
  return 1
}

build_base() {  # build_base <tag>: the base into buildah's storage, from Debian's packages
  local tag="$1" work ctr
  local -a recipe sources
  mapfile -t recipe < <(base_recipe)
  mapfile -t sources < <(apt_sources)
  work="$(mktemp -d "$ROOT_DIR/base.XXXXXX")"
  say "building the base $tag: mmdebstrap $SUITE minbase + $BASE_PACKAGES"
  logged mmdebstrap "${recipe[@]}" "$work/rootfs.tar" "${sources[@]}"
  ctr="$(buildah "${STORAGE[@]}" from scratch)"
  buildah "${STORAGE[@]}" add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
  rm -rf "$work"
  # the environment python:3.11-slim gives its derived images: its interpreter first on PATH, a UTF-8 locale
  buildah "${STORAGE[@]}" config --cmd python3 --env LANG=C.UTF-8 \
    --env PATH=/opt/poolboy/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah "${STORAGE[@]}" commit --quiet --rm "$ctr" "$tag" >/dev/null
}

build_image() {  # build_image <base tag> <image tag>: the Dockerfile, as it is, on that base
  local -a trust=()
  # the build host's CA bundle for the RUN steps' downloads (a machine behind a TLS-inspecting proxy), mounted
  # read-only over the base's own for the build only: the image keeps Debian's
  [ -f /etc/ssl/certs/ca-certificates.crt ] \
    && trust=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
  logged buildah "${STORAGE[@]}" bud --isolation chroot --layers --force-rm --pull-never "${trust[@]}" \
    --build-arg BASE_IMAGE="$1" --tag "$2" --file Dockerfile .
}

prune() {  # prune <base tag> <image tag>: keep the newest $KEEP image directories, and in buildah's storage only
  # the layers of this build (its base and its steps: the layer cache of the next one)
  find "$ROOT_DIR" -mindepth 1 -maxdepth 1 -type d -name '[0-9a-f]*' -printf '%T@ %p\n' | sort -rn \
    | tail -n +$((KEEP + 1)) | cut -d' ' -f2- | xargs -r rm -rf
  buildah "${STORAGE[@]}" images --format '{{.Name}}:{{.Tag}}' \
    | awk -v base="$1" -v image="$2" -v ours="^localhost/$NAME(-base)?:" '$0 ~ ours && $0 != base && $0 != image' \
    | xargs -r buildah "${STORAGE[@]}" rmi >/dev/null
  buildah "${STORAGE[@]}" rmi --prune >/dev/null
}

main() {
  local base_key key out ref started=$SECONDS
  base_key="$( { base_recipe; apt_sources | xargs -r cat; } | sha256sum | cut -c1-16)"
  key="$(inputs_hash "$base_key")"
  out="$ROOT_DIR/$key"
  ref="oci:$out/oci:$NAME"
  if [ -f "$out/oci/index.json" ]; then
    say "reusing $out (inputs unchanged)"
    echo "$ref"; exit 0
  fi
  require_tools mmdebstrap=mmdebstrap buildah=buildah
  mkdir -p "$ROOT_DIR"
  exec 9>"$ROOT_DIR/.lock"
  flock 9  # one build at a time on this machine; a concurrent one for the same inputs is reused below
  if [ -f "$out/oci/index.json" ]; then echo "$ref"; exit 0; fi
  : >"$ROOT_DIR/build.log"
  STORAGE=(--root "$ROOT_DIR/storage" --runroot "$ROOT_DIR/run" --storage-driver "$(storage_driver)")

  local base="localhost/$NAME-base:$base_key" image="localhost/$NAME:$key"
  if buildah "${STORAGE[@]}" inspect --type image "$base" >/dev/null 2>&1; then
    say "reusing the base $base"
  else
    timed "built the base" build_base "$base"
  fi
  say "building the Dockerfile on $base (buildah bud --isolation chroot)"
  timed "built the image" build_image "$base" "$image"
  rm -rf "$out.partial"
  mkdir -p "$out.partial"
  timed "wrote the OCI layout" \
    buildah "${STORAGE[@]}" push --quiet --format oci "$image" "oci:$out.partial/oci:$NAME"
  mv "$out.partial" "$out"
  prune "$base" "$image" || say "pruning the cache failed; the image is built"
  say "$out: $(du -sm "$out" | cut -f1) MB, in $((SECONDS - started)) s"
  echo "$ref"
}

main "$@"
