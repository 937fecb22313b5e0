# shellcheck shell=bash
# What the image builds share (sourced by scripts/build-image.sh and scripts/node-images.sh, from the repository's
# root): a Debian root filesystem by mmdebstrap, imported into buildah's storage as one layer; an OCI image layout
# per hash of a build's inputs, reused while they are unchanged; one build at a time on the machine (buildah's
# storage is shared); the log (build.log beside the layouts), the timings and the pruning of old builds. Progress
# goes to stderr.
#   POOLBOY_IMAGE_CACHE=dir   where builds are kept (default ~/.cache/poolboy/image)

say() { printf '[image] %s\n' "$*" >&2; }
unavailable() { say "$*"; exit 2; }

SUITE="bookworm"
ROOT_DIR="${POOLBOY_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/poolboy/image}"
KEEP=3  # layouts kept per image; older ones are removed after a build

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

minbase_recipe() {  # minbase_recipe <packages> [<mmdebstrap option> ...]: the mmdebstrap arguments, one a line, of
  # $SUITE's minbase (what debian:bookworm-slim holds) with those packages and no apt lists, caches, docs, man
  # pages or locales (the copyright files stay), no device nodes; the options run before the clean-up
  printf '%s\n' --variant=minbase --include="$1" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --skip=output/dev \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    "${@:2}" \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log' \
    "$SUITE"
}

recipe_key() {  # recipe_key <recipe function>: the hash of its arguments and of the apt sources they are fetched by
  { "$1"; apt_sources | xargs -r cat; } | sha256sum | cut -c1-16
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

logged() {  # logged <command ...>: its output into the build's log, whose end is shown when it fails
  "$@" >>"$LOG" 2>&1 && return 0
  tail -n 30 "$LOG" >&2
  say "failed: $1 (the whole log: $LOG)"
  return 1
}

scratch_image() {  # scratch_image <tag> <source> <destination> [<buildah config option> ...]: an image of one layer,
  # <source> (a tar archive is unpacked, with its owners and modes) at <destination>, into buildah's storage
  local tag="$1" source="$2" destination="$3" ctr
  shift 3
  ctr="$(buildah "${STORAGE[@]}" from scratch)"
  buildah "${STORAGE[@]}" add --quiet "$ctr" "$source" "$destination" >/dev/null
  [ "$#" -eq 0 ] || buildah "${STORAGE[@]}" config "$@" "$ctr"
  buildah "${STORAGE[@]}" commit --quiet --rm "$ctr" "$tag" >/dev/null
}

debian_image() {  # debian_image <tag> <recipe function> <config function>: mmdebstrap's root filesystem of the
  # recipe as an image of one layer; the config function, given the root filesystem's tar, prints the buildah
  # config options, one a line
  local tag="$1" work options
  local -a recipe sources config
  mapfile -t recipe < <("$2")
  mapfile -t sources < <(apt_sources)
  work="$(mktemp -d "$ROOT_DIR/base.XXXXXX")"
  logged mmdebstrap "${recipe[@]}" "$work/rootfs.tar" "${sources[@]}"
  options="$("$3" "$work/rootfs.tar")"
  mapfile -t config <<<"$options"
  scratch_image "$tag" "$work/rootfs.tar" / "${config[@]}"
  rm -rf "$work"
}

package_version() {  # package_version <root filesystem tar> <package>: its Debian version (epoch:upstream-revision)
  tar -xOf "$1" ./var/lib/dpkg/status | awk -v package="$2" '
    /^Package: / { name = $2 } /^Version: / && name == package { print $2; found = 1; exit }
    END { exit !found }'
}

prune() {  # prune <directory> <name> <image tag> ...: keep the newest $KEEP layouts in the directory, and in
  # buildah's storage, of the images named <name> or <name>-base, only those tags (the next build's layer cache);
  # the work directories failed builds left go (no build runs beside this one: the caller holds the lock)
  rm -rf "$ROOT_DIR"/base.*
  find "$1" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*/[0-9a-f]{16}' -printf '%T@ %p\n' \
    | sort -rn | tail -n +$((KEEP + 1)) | cut -d' ' -f2- | xargs -r rm -rf
  buildah "${STORAGE[@]}" images --format '{{.Name}}:{{.Tag}}' \
    | awk -v keep="${*:3}" -v ours="^localhost/$2(-base)?:" '
        BEGIN { split(keep, tags, " "); for (i in tags) kept[tags[i]] = 1 }
        $0 ~ ours && !($0 in kept)' \
    | xargs -r buildah "${STORAGE[@]}" rmi >/dev/null
  buildah "${STORAGE[@]}" rmi --prune >/dev/null
}

cached_layout() {  # cached_layout <directory> <name> <key> <builder> [<image tag> ...]: the OCI layout of the image
  # <name> in <directory>/<key>/oci, built unless there already: `<builder> localhost/<name>:<key>` builds it into
  # buildah's storage, where the other tags given stay for the next build. Prints its reference, oci:DIR:NAME.
  local directory="$1" name="$2" key="$3" builder="$4"
  shift 4
  local out="$directory/$key" image="localhost/$name:$key" started=$SECONDS
  local ref="oci:$out/oci:$name"
  if [ -f "$out/oci/index.json" ]; then
    say "reusing $out (inputs unchanged)"
    echo "$ref"; return 0
  fi
  require_tools mmdebstrap=mmdebstrap buildah=buildah
  mkdir -p "$directory"
  (
    flock 9  # one build at a time on this machine; a concurrent one for the same inputs is reused below
    if [ -f "$out/oci/index.json" ]; then echo "$ref"; exit 0; fi
    # the log of this image's last build, and buildah's options, for the builder and what it calls
    LOG="$directory/build.log"
    : >"$LOG"
    STORAGE=(--root "$ROOT_DIR/storage" --runroot "$ROOT_DIR/run" --storage-driver "$(storage_driver)")
    "$builder" "$image"
    rm -rf "$out.partial"
    mkdir -p "$out.partial"
    timed "wrote the OCI layout" \
      buildah "${STORAGE[@]}" push --quiet --format oci "$image" "oci:$out.partial/oci:$name"
    mv "$out.partial" "$out"
    prune "$directory" "$name" "$image" "$@" || say "pruning the cache failed; the image is built"
    say "$out: $(du -sm "$out" | cut -f1) MB, in $((SECONDS - started)) s"
    echo "$ref"
  ) 9>"$ROOT_DIR/.lock"
}
