#!/usr/bin/env bash
# Builds the container image the Helm chart runs, without a Docker daemon or a container registry:
#   1. a base like python:3.11-slim from Debian's packages: mmdebstrap bookworm, variant minbase (what
#      debian:bookworm-slim holds), with python3, python3-venv, ca-certificates, netbase and tzdata, no apt lists,
#      caches or docs; a virtualenv /opt/poolboy first on PATH, so the Dockerfile's `pip` installs into it;
#   2. the project's own Dockerfile on top of it: `buildah bud --isolation chroot --layers`, FROM that base through
#      the build-arg BASE_IMAGE, so what is built here is what the Dockerfile says (user, entrypoint, env, layout);
#   3. an OCI image layout in $POOLBOY_IMAGE_CACHE/<hash of the inputs>/oci, reused while the inputs (this script and
#      scripts/image-lib.sh, the Dockerfile, .dockerignore, every COPY source, the base's recipe) are unchanged.
# Prints the image reference (oci:DIR:poolboy-celery) on its last line of stdout; progress and timings go to stderr.
# Exits 2, saying what to install, when a tool is missing. Needs root (buildah and mmdebstrap run unprivileged only
# with subordinate uid ranges, which these machines do not have). Runs niced.
#   POOLBOY_IMAGE_CACHE=dir   where builds are kept (default ~/.cache/poolboy/image)
set -euo pipefail
[ "$(nice)" -ge 10 ] || exec nice -n 10 "$0" "$@"
cd "$(dirname "$0")/.."

. scripts/image-lib.sh

NAME="poolboy-celery"
# The base's packages: the interpreter and what python:3.11-slim adds to debian:bookworm-slim.
BASE_PACKAGES="python3,python3-venv,ca-certificates,netbase,tzdata"

base_recipe() {  # the mmdebstrap arguments of the base, one a line (its cache key is their hash)
  minbase_recipe "$BASE_PACKAGES" --customize-hook='chroot "$1" python3 -m venv /opt/poolboy'
}

base_config() {  # the environment python:3.11-slim gives its derived images: its interpreter first on PATH, a UTF-8
  # locale
  printf '%s\n' --cmd python3 --env LANG=C.UTF-8 \
    --env PATH=/opt/poolboy/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
}

copy_sources() {  # every source path of the Dockerfile's COPY instructions (flags and the destination left out)
  awk 'toupper($1) == "COPY" { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' Dockerfile
}

inputs_hash() {  # the hash of every file the image is built from, by path and content
  local sources
  mapfile -t sources < <(copy_sources)
  { sha256sum scripts/build-image.sh scripts/image-lib.sh Dockerfile .dockerignore
    find "${sources[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z \
      | xargs -0 sha256sum
    printf '%s\n' "$1"
  } | sha256sum | cut -c1-16
}

build_base() {  # build_base <tag>: the base into buildah's storage, from Debian's packages
  say "building the base $1: mmdebstrap $SUITE minbase + $BASE_PACKAGES"
  debian_image "$1" base_recipe base_config
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

build() {  # build <image tag>: the base unless buildah's storage holds it, then the Dockerfile on it
  if buildah "${STORAGE[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
    say "reusing the base $BASE"
  else
    timed "built the base" build_base "$BASE"
  fi
  say "building the Dockerfile on $BASE (buildah bud --isolation chroot)"
  timed "built the image" build_image "$BASE" "$1"
}

main() {
  local base_key
  base_key="$(recipe_key base_recipe)"
  BASE="localhost/$NAME-base:$base_key"
  cached_layout "$ROOT_DIR" "$NAME" "$(inputs_hash "$base_key")" build "$BASE"
}

main "$@"
