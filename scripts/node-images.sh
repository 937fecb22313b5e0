#!/usr/bin/env bash
# The images a node of the real cluster runs, where no registry is reachable, as archives `ctr -n k8s.io images
# import` takes (docker-archive: manifest.json's RepoTags are the fully qualified names kubelet looks up):
#   docker.io/library/poolboy-celery:<chart appVersion>   the project's image, scripts/build-image.sh
#   poolboy.local/redis:<Redis version>                    Debian bookworm's redis-server and redis-tools on its
#                                                          minbase, laid out as docker.io/library/redis is (the
#                                                          chart's redis.image)
#   poolboy.local/pause:<hash of the binary>               the pod sandbox: the static pause binary, alone
# Each image is an OCI layout in the image cache (scripts/image-lib.sh), built once per hash of its inputs; each
# archive is written beside its image's layout, once per name. Prints `<name> <archive>` a line, one per image, on
# stdout; progress and timings go to stderr. Exits 2, saying what to install, when a tool is missing or not root.
#   scripts/node-images.sh [PAUSE]   PAUSE: the pause binary (default: node/build.sh's, built there if missing)
#   POOLBOY_IMAGE_CACHE=dir          where builds are kept (default ~/.cache/poolboy/image)
set -euo pipefail
shopt -s inherit_errexit  # a failed step inside $(...) stops the script instead of printing half a result
[ "$(nice)" -ge 10 ] || exec nice -n 10 "$0" "$@"
cd "$(dirname "$0")/.."
. scripts/image-lib.sh

REDIS_PACKAGES="redis-server,redis-tools"

redis_recipe() {  # the mmdebstrap arguments of the Redis image, one a line: user and group redis are 999, as in
  # the official image and the chart's securityContext, made before redis-server's package would make them with
  # the next free system ids; the official entrypoint's behaviour (scripts/redis-entrypoint.sh); /data its user's
  minbase_recipe "$REDIS_PACKAGES" \
    --essential-hook='echo "redis:x:999:999::/var/lib/redis:/usr/sbin/nologin" >>"$1/etc/passwd"' \
    --essential-hook='echo "redis:x:999:" >>"$1/etc/group"' \
    --customize-hook='upload scripts/redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh' \
    --customize-hook='chmod 755 "$1/usr/local/bin/docker-entrypoint.sh" && install -d -o 999 -g 999 "$1/data"'
}

redis_config() {  # redis_config <root filesystem tar>: what docker.io/library/redis configures, one option a line:
  # the entrypoint that execs its arguments, redis-server by default, in /data; REDIS_VERSION the upstream version
  local debian upstream
  debian="$(package_version "$1" redis-server)"
  upstream="${debian#*:}"
  upstream="${upstream%%-*}"
  printf '%s\n' --entrypoint '["docker-entrypoint.sh"]' --cmd redis-server --workingdir /data --volume /data \
    --port 6379/tcp --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "REDIS_VERSION=$upstream" --label "org.opencontainers.image.version=$debian"
}

build_redis() {  # build_redis <tag>
  say "building $1: mmdebstrap $SUITE minbase + $REDIS_PACKAGES"
  timed "built the image" debian_image "$1" redis_recipe redis_config
}

build_pause() {  # build_pause <tag>: $PAUSE as /pause, its only file, run as the upstream pause image runs it
  scratch_image "$1" "$PAUSE" /pause --entrypoint '["/pause"]' --user 65535:65535
}

inputs_key() {  # inputs_key <function> ...: the hash of the library, of these functions' definitions (the values
  # they use are in them or on stdin) and of stdin
  { sha256sum <scripts/image-lib.sh; declare -f "$@"; cat; } | sha256sum | cut -c1-16
}

archive() {  # archive <oci reference> <name>: the image as a docker-archive tagged <name>, beside its layout (pruned
  # with it); prints "<name> <archive>"
  local ref="$1" name="$2" layout file partial
  layout="${ref#oci:}"
  layout="${layout%:*}"
  file="${layout%/oci}/${name//[\/:]/_}.tar"
  if [ ! -s "$file" ]; then
    partial="$(mktemp "$file.XXXXXX")"
    timed "wrote $file" skopeo copy --quiet "$ref" "docker-archive:$partial:$name"
    # ctr import names the image by RepoTags: a shortened or missing name would leave kubelet without the image
    tar -xOf "$partial" manifest.json | python3 -c '
import json, sys
sys.exit(json.load(sys.stdin)[0]["RepoTags"] != [sys.argv[1]])' "$name" \
      || { say "$partial: manifest.json does not tag the image $name"; exit 1; }
    chmod 644 "$partial"
    mv "$partial" "$file"
  fi
  echo "$name $file"
}

main() {
  local project redis pause version app
  local -a lines
  require_tools mmdebstrap=mmdebstrap buildah=buildah skopeo=skopeo
  PAUSE="${1:-}"
  if [ -n "$PAUSE" ] && ! { [ -f "$PAUSE" ] && [ -x "$PAUSE" ]; }; then
    unavailable "$PAUSE: not an executable file (the pause binary)"
  fi
  app="$(awk '$1 == "appVersion:" { gsub(/["'\'']/, "", $2); print $2 }' helm/Chart.yaml)"
  [ -n "$app" ] || { say "helm/Chart.yaml has no appVersion"; exit 1; }

  project="$(scripts/build-image.sh | tail -n 1)"
  redis="$(cached_layout "$ROOT_DIR/redis" poolboy-redis \
    "$({ recipe_key redis_recipe; cat scripts/redis-entrypoint.sh; } | inputs_key redis_config build_redis)" build_redis)"
  if [ -z "$PAUSE" ]; then
    say "the pause binary from node/build.sh (it builds the node's binaries the first time)"
    PAUSE="$(node/build.sh | tail -n 1)/pause"
  fi
  pause="$(cached_layout "$ROOT_DIR/pause" poolboy-pause "$(inputs_key build_pause <"$PAUSE")" build_pause)"
  version="$(skopeo inspect --format '{{range .Env}}{{println .}}{{end}}' "$redis" | sed -n 's/^REDIS_VERSION=//p')"
  [ -n "$version" ] || { say "$redis: no REDIS_VERSION in its environment"; exit 1; }

  lines+=("$(archive "$project" "docker.io/library/poolboy-celery:$app")")
  lines+=("$(archive "$redis" "poolboy.local/redis:$version")")
  lines+=("$(archive "$pause" "poolboy.local/pause:$(sha256sum <"$PAUSE" | cut -c1-12)")")
  printf '%s\n' "${lines[@]}"
}

main "$@"
