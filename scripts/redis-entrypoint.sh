#!/bin/sh
# The entrypoint of the Redis image scripts/node-images.sh builds from Debian's redis-server, installed as
# /usr/local/bin/docker-entrypoint.sh: it behaves as the official image's (docker-library/redis), so the chart's
# container arguments mean there what they mean on docker.io/library/redis.
set -e

# options alone (`--save ""`), or a config file first, are redis-server's arguments
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- redis-server "$@"
fi

# started as root (docker run without --user): the server's files to redis (uid 999), then the server as redis
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
	find . \! -user redis -exec chown redis '{}' +
	exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

# The official image compiles protected mode off (published ports are chosen explicitly); Debian's binary has it on,
# so it is turned off here, before the caller's options (which can turn it on again). With a config file first the
# file decides, and Redis's default (on) holds where it says nothing; the flags that do not start a server are
# left alone.
if [ "$1" = redis-server ]; then
	case "${2:---}" in
		-v | --version | -h | --help | --test-memory | --check-system) ;;
		--*) shift; set -- redis-server --protected-mode no "$@" ;;
	esac
fi

# files the server writes readable by its user only, unless the caller chose a umask
if [ "$(umask)" = 0022 ]; then
	umask 0077
fi

exec "$@"
