# Poolboy on Celery: one image for every process (watcher, worker, beat, flower), chosen by the first argument:
#   docker run IMAGE watcher | worker --queues claims | beat | flower --address 0.0.0.0
# The Helm chart and docker-compose.yml use it. BASE_IMAGE is any image with python 3.11 and its `pip` on PATH:
# scripts/build-image.sh builds this file with buildah on a base made from Debian's packages, where no registry is
# reachable, and tests/deploy/test_image.py runs the result as the chart does (uid 1000, read-only root, /tmp).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    POOLBOY_CRDS_DIR=/app/helm/crds \
    HOME=/tmp

WORKDIR /app

# Pinned runtime dependencies first, in their own layer, so code changes do not reinstall them: every package,
# transitive ones and the build backend included, from the hashed lock (requirements.lock, compiled from
# requirements-image.in), so pip refuses any file whose hash differs from the one locked.
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock

COPY pyproject.toml README.md ./
COPY poolboy ./poolboy
COPY redisscripts ./redisscripts
COPY cache ./cache
COPY workqueue ./workqueue
COPY engine ./engine
COPY workers ./workers
COPY watcher ./watcher
COPY devcluster ./devcluster
COPY stack ./stack
COPY procutil ./procutil
COPY poolboy_kubectl ./poolboy_kubectl
COPY helm/crds ./helm/crds
RUN pip install --no-deps --no-build-isolation . \
 && useradd --uid 1000 --user-group --no-create-home --home-dir /tmp --shell /usr/sbin/nologin poolboy

# Non-root; the working directory is /tmp so that celery beat's schedule file and Prometheus multiprocess files
# land on a writable volume when the root filesystem is read-only (the Helm chart mounts an emptyDir there).
USER 1000:1000
WORKDIR /tmp
EXPOSE 9090 5555
ENTRYPOINT ["poolboy"]
CMD ["--help"]
