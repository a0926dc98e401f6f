# The same app `make demo` runs: requirements.txt, ex_app/ and lib/, started with `python -m ex_app.main`,
# deployable by AppAPI through HaRP (docker/start.sh + frpc) or a direct Docker daemon.
# Release: docker buildx build --platform linux/amd64,linux/arm64 . (.github/workflows/release.yml)
# Offline test build: tests/harp/build.sh (a Debian base made with debootstrap, frpc built from source).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
# Set by buildx for each platform; empty under the legacy builder (then the machine's architecture).
ARG TARGETARCH

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/ex_app/lib \
    PATH=/opt/venv/bin:$PATH \
    # Every model runs offline from installed packages; make any accidental hub access fail fast.
    HF_HUB_OFFLINE=1 \
    ANONYMIZED_TELEMETRY=False

WORKDIR /ex_app
# A virtualenv works the same on the official slim base and on Debian's python3 (no system pip there).
# PIP_INDEX_URL/PIP_FIND_LINKS: unset for a release; the offline test build points them at local wheels.
ARG PIP_INDEX_URL
ARG PIP_FIND_LINKS
COPY requirements.txt .
# Then drop what the app never runs (~180 MB): kubernetes serves only Chroma's distributed server mode
# (the embedded store never imports it), hf_xet only hub downloads (models ship in packages),
# pip/setuptools are not needed once installed, nor the packages' own test suites. The HaRP tier
# runs the whole app on this image.
RUN python3 -m venv /opt/venv && pip install --no-cache-dir -r requirements.txt \
    && pip uninstall -y -q kubernetes hf-xet && pip uninstall -y -q pip setuptools \
    && find /opt/venv/lib -depth -type d \( -name tests -o -name test \) -path '*/site-packages/*/*' \
       -exec rm -rf {} +

# frpc tunnels HaRP's port for this app to our unix socket (docker/start.sh starts it).
ARG FRP_RELEASES=https://github.com/fatedier/frp/releases/download
COPY docker docker
RUN python3 docker/install-frpc.py "$TARGETARCH" /usr/local/bin/frpc && chmod 755 docker/start.sh

COPY appinfo appinfo
COPY img img
COPY lib lib
COPY ex_app ex_app

# AppAPI passes APP_ID, APP_SECRET, APP_HOST/APP_PORT, APP_PERSISTENT_STORAGE (a volume) and, through
# HaRP, HP_SHARED_KEY/HP_FRP_ADDRESS/HP_FRP_PORT: then the app listens on /tmp/exapp.sock (nc_py_api).
HEALTHCHECK --interval=15s --timeout=6s --start-period=60s --retries=3 CMD ["python3", "/ex_app/docker/healthcheck.py"]
ENTRYPOINT ["/ex_app/docker/start.sh", "python3", "-m", "ex_app.main"]
