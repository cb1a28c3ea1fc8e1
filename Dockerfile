# One image for every headstart component; the manifests choose the subcommand:
#   headstart extender | headstart overprovisioner | headstart simulate ...
# Build, push and point the manifests at it: docs/image.md
#   docker build --platform linux/amd64 -t headstart:0.1.0 .
# No `# syntax=` line: the builder's own Dockerfile frontend serves every instruction
# here, and a frontend image pulled by tag would be one more unpinned input.
# The base image by digest (a tag can be pushed again; a digest cannot): the
# python:3.11.11-slim-bookworm index as public Dockerfiles pin it (docs/image.md says
# where it comes from and how to refresh it).
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5

# The project's sources, once, for both images below.
FROM ${PYTHON_IMAGE} AS source
WORKDIR /src
COPY pyproject.toml README.md ./
COPY common ./common
COPY kube ./kube
COPY jobtraces ./jobtraces
COPY bucketing ./bucketing
COPY locality ./locality
COPY predictor ./predictor
COPY overprovisioner ./overprovisioner
COPY extender ./extender
COPY headstart ./headstart

# The extender alone, without torch, pandas, scipy, statsmodels or matplotlib (a smaller
# image and dependency surface for the component that binds pods):
#   docker build --target extender -t headstart-extender:0.1.0 .
FROM ${PYTHON_IMAGE} AS build-extender
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/headstart
ENV PATH=/opt/headstart/bin:$PATH
WORKDIR /src
# Every file pip fetches must match a hash in the lock, and nothing the lock does not name
# is pulled in (requirements/extender.lock, compiled from extender.txt; docs/image.md).
COPY requirements/extender.lock ./
RUN pip install --require-hashes --no-deps -r extender.lock && pip check
COPY --from=source /src ./
# --no-deps: the package's metadata lists every component's dependencies; this image
# runs `headstart extender` only (tests/test_extender_image.py keeps that true), so
# `pip check` ran above, on the lock alone: here it would report the forecasting stack.
RUN pip install --no-deps . && headstart extender --help > /dev/null

FROM ${PYTHON_IMAGE} AS extender
COPY --from=build-extender /opt/headstart /opt/headstart
ENV PATH=/opt/headstart/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["headstart"]
CMD ["extender", "--help"]

# Every component (the default target).
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/headstart
ENV PATH=/opt/headstart/bin:$PATH
WORKDIR /src
# The runtime dependencies (no [dev] extra), every file checked against the lock's hashes;
# then CPU-only torch, checked against requirements/torch.txt's hashes, with --no-deps
# because the lock already holds torch's dependencies. The forecaster trains on
# CPU in a few minutes; the CUDA wheels would add gigabytes to an image on CPU nodes.
COPY requirements/headstart.lock requirements/torch.txt ./
RUN pip install --require-hashes --no-deps -r headstart.lock && \
    pip install --require-hashes --no-deps --index-url https://download.pytorch.org/whl/cpu \
      -r torch.txt
COPY --from=source /src ./
RUN pip install --no-deps . && pip check

FROM ${PYTHON_IMAGE}
COPY --from=build /opt/headstart /opt/headstart
ENV PATH=/opt/headstart/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MPLCONFIGDIR=/tmp/matplotlib
# Non-root, numeric so runAsNonRoot can verify it; the root filesystem is mounted
# read-only by the manifests, with /tmp and /var/lib/headstart as volumes.
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["headstart"]
CMD ["--help"]
