#!/bin/bash
# Builds the images the HaRP tier deploys, offline except Debian's archive and PyPI, and caches them
# per machine by the content hash of their inputs (a fresh machine builds everything, ~6 min).
#   harp-debian:0.4.4                          HaRP, from ../shared/harp (its build-images.sh)
#   semantic-mcp-base:bookworm                 Debian bookworm + python3 (debootstrap; no registry here)
#   ghcr.io/nextcloud-semantic-mcp/semantic_mcp:<tag>   our Dockerfile on that base, frpc built from
#                                              ../shared/harp's vendored frp source (the release build downloads it)
# Needs root and a running dockerd. Prints the image name of our app last.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=$(cd "$REPO/../shared/harp" && pwd)
CACHE=${HARP_CACHE:-/var/cache/semantic-mcp-harp}
mkdir -p "$CACHE"
export DOCKER_BUILDKIT=0  # the legacy builder takes a local FROM image as is and never pulls
log() { echo "[harp build] $*" >&2; }
sha() { sha256sum | cut -c1-16; }

# 1. HaRP and frpc, rebuilt only when ../shared/harp changes.
harp_key=$(cat "$SHARED"/*.tar.gz "$SHARED"/debian-build/* | sha)
if ! docker image inspect "harp-debian:in-$harp_key" >/dev/null 2>&1 || [ ! -x "$CACHE/harp-build/ctx/frpc" ]; then
  log "building HaRP and frp ($harp_key)"
  WORK="$CACHE/harp-build" "$SHARED/debian-build/build-images.sh" >&2
  docker tag harp-debian:0.4.4 "harp-debian:in-$harp_key"
fi

# 2. The Debian base standing in for python:3.11-slim-bookworm (same Debian release and Python minor).
if ! docker image inspect semantic-mcp-base:bookworm >/dev/null 2>&1; then
  log "making the Debian bookworm base with debootstrap"
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  rootfs="$CACHE/base-rootfs"; rm -rf "$rootfs"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" "$mirror" >&2
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - semantic-mcp-base:bookworm >&2
  rm -rf "$rootfs"
fi

# 3. Our image, from the files the Dockerfile copies (tracked or not: the working tree is what is tested).
#    The build reaches no public index: a local mirror serves the wheels (downloaded here with this
#    machine's pip settings) and frpc in frp's release layout, through the build args a release leaves unset.
cd "$REPO"
tag=$(sed -n 's:.*<image-tag>\(.*\)</image-tag>.*:\1:p' appinfo/info.xml)
image=ghcr.io/nextcloud-semantic-mcp/semantic_mcp
app_key=$( { docker image inspect -f '{{.Id}}' semantic-mcp-base:bookworm; sha256sum "$CACHE/harp-build/ctx/frpc";
             find Dockerfile .dockerignore requirements.txt appinfo img lib ex_app docker -type f \
               -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum; } | sha)
if ! docker image inspect "$image:in-$app_key" >/dev/null 2>&1; then
  log "building $image ($app_key)"
  mirror="$CACHE/mirror"; frp="frp_0.61.1_linux_$(dpkg --print-architecture)"
  wheels_done="$mirror/wheels/.downloaded-$(sha < requirements.txt)"  # pip download takes minutes even when cached
  if [ ! -f "$wheels_done" ]; then
    python3 -m pip download -q -d "$mirror/wheels" -r requirements.txt >&2
    # A dependency published only as source (red-black-tree-mod, for extract-msg) is built here: the
    # image's pip then finds a wheel, and needs no build tools from an index it cannot reach.
    for sdist in "$mirror"/wheels/*.tar.gz; do
      if [ -e "$sdist" ]; then python3 -m pip wheel -q --no-deps -w "$mirror/wheels" "$sdist" >&2; rm "$sdist"; fi
    done
    touch "$wheels_done"
  fi
  rm -rf "$mirror/$frp" && mkdir -p "$mirror/$frp" "$mirror/frp/v0.61.1" && cp "$CACHE/harp-build/ctx/frpc" "$mirror/$frp/"
  tar -C "$mirror" -czf "$mirror/frp/v0.61.1/$frp.tar.gz" "$frp"
  port=${HARP_MIRROR_PORT:-24090}
  python3 -m http.server -b 127.0.0.1 -d "$mirror" "$port" >/dev/null 2>&1 & server=$!
  trap 'kill $server' EXIT
  # --network host: the build reaches the mirror on 127.0.0.1 although dockerd runs without a bridge.
  docker build -q --network host --build-arg BASE_IMAGE=semantic-mcp-base:bookworm \
    --build-arg PIP_INDEX_URL="http://127.0.0.1:$port/wheels/" --build-arg PIP_FIND_LINKS="http://127.0.0.1:$port/wheels/" \
    --build-arg FRP_RELEASES="http://127.0.0.1:$port/frp" -t "$image:in-$app_key" . >&2
fi
docker tag "$image:in-$app_key" "$image:$tag"
echo "$image:$tag"
