#!/bin/bash
# Builds the images the HaRP tier deploys, offline except Debian's archive and PyPI, and caches them
# per machine by the content hash of their inputs (a fresh machine builds everything, ~6 min).
#   harp-sid:0.4.4                             HaRP 0.4.4 from ../shared/harp's tarballs (Dockerfile.harp) on
#   semantic-mcp-harp-base:sid-<hash>          Debian sid: haproxy >= 3.1 like upstream's image (ADR 0523), python3,
#                                              aiohttp and pydantic as Debian packages (debootstrap; no registry here)
#   semantic-mcp-base:bookworm                 Debian bookworm + python3 (debootstrap)
#   ghcr.io/nextcloud-semantic-mcp/semantic_mcp:<tag>   our Dockerfile on that base, frpc built from
#                                              ../shared/harp's vendored frp source (the release build downloads it)
# Needs root and a running dockerd. Prints the image name of our app last.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$REPO/tests/harp"
SHARED=$(cd "$REPO/../shared/harp" && pwd)
CACHE=${HARP_CACHE:-/var/cache/semantic-mcp-harp}
mkdir -p "$CACHE"
export DOCKER_BUILDKIT=0  # the legacy builder takes a local FROM image as is and never pulls
log() { echo "[harp build] $*" >&2; }
sha() { sha256sum | cut -c1-16; }
archive=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
archive=${archive:-http://deb.debian.org/debian}
# A Debian suite with some packages, made into a local image: debootstrap_image IMAGE SUITE PACKAGES
debootstrap_image() {
  local rootfs="$CACHE/base-rootfs"; rm -rf "$rootfs"
  debootstrap --variant=minbase --include="$3" "$2" "$rootfs" "$archive" >&2
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$1" >&2
  rm -rf "$rootfs"
}

# 1. frps and frpc 0.61.1 from frp's vendored source (no module proxy; ~1 min on 2 cores), rebuilt only
#    when that source changes. Go >= 1.22 (frp's go.mod) comes from bookworm-backports (bookworm has 1.19).
frp_tar="$SHARED/frp-0.61.1-vendored-src.tar.gz"; frp_dir="$CACHE/frp-$(sha < "$frp_tar")"
if [ ! -x "$frp_dir/frpc" ] || [ ! -x "$frp_dir/frps" ]; then
  log "building frp from its vendored source"
  GO=${GO:-/usr/lib/go-1.23/bin/go}
  if [ ! -x "$GO" ]; then
    echo "deb $archive bookworm-backports main" > /etc/apt/sources.list.d/harp-bookworm-backports.list
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t bookworm-backports golang-1.23-go >&2
  fi
  src="$CACHE/frp-src"; rm -rf "$src" && mkdir -p "$src" && tar xzf "$frp_tar" -C "$src"
  ( cd "$src"/frp-0.61.1 && CGO_ENABLED=0 GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local \
    GOCACHE="$CACHE/gocache" GOPATH="$CACHE/gopath" "$GO" build -trimpath -ldflags "-s -w" -o "$frp_dir/" \
    ./cmd/frps ./cmd/frpc ) >&2
  rm -rf "$src"
fi

# 2. HaRP on Debian sid, the one Debian suite with haproxy >= 3.1 (trixie has 3.0, whose SPOE is 2.6's).
#    The base is remade only when its package list changes (sid moves; a machine keeps what it made).
harp_packages=haproxy,python3,python3-pip,python3-aiohttp,python3-pydantic,openssl,curl,netcat-openbsd,gettext-base,ca-certificates,procps
harp_base="semantic-mcp-harp-base:sid-$(echo "$harp_packages" | sha)"
if ! docker image inspect "$harp_base" >/dev/null 2>&1; then
  log "making the Debian sid base for HaRP with debootstrap"
  debootstrap_image "$harp_base" sid "$harp_packages"
fi
harp_key=$( { docker image inspect -f '{{.Id}}' "$harp_base"; cat "$SHARED"/harp-0.4.4-src.tar.gz \
              "$SHARED"/haproxy-python-spoa-f00f3f7.tar.gz "$HERE/Dockerfile.harp" "$frp_dir/frps" "$frp_dir/frpc"; } | sha)
if ! docker image inspect "harp-sid:in-$harp_key" >/dev/null 2>&1; then
  log "building HaRP ($harp_key)"
  ctx="$CACHE/harp-ctx"; rm -rf "$ctx" && mkdir -p "$ctx/wheels"
  tar xzf "$SHARED/harp-0.4.4-src.tar.gz" -C "$ctx"
  cp "$frp_dir/frps" "$frp_dir/frpc" "$ctx/"
  python3 -m pip wheel -q --no-deps -w "$ctx/wheels" "$SHARED/haproxy-python-spoa-f00f3f7.tar.gz" >&2  # pure Python
  docker build -q -f "$HERE/Dockerfile.harp" --build-arg BASE_IMAGE="$harp_base" -t "harp-sid:in-$harp_key" "$ctx" >&2
  rm -rf "$ctx"
fi
docker tag "harp-sid:in-$harp_key" harp-sid:0.4.4

# 3. The Debian base standing in for python:3.11-slim-bookworm (same Debian release and Python minor).
if ! docker image inspect semantic-mcp-base:bookworm >/dev/null 2>&1; then
  log "making the Debian bookworm base with debootstrap"
  debootstrap_image semantic-mcp-base:bookworm bookworm python3,python3-venv,ca-certificates
fi

# 4. Our image, from the files the Dockerfile copies (tracked or not: the working tree is what is tested).
#    The build reaches no public index: a local mirror serves the wheels (downloaded here with this
#    machine's pip settings) and frpc in frp's release layout, through the build args a release leaves unset.
cd "$REPO"
tag=$(sed -n 's:.*<image-tag>\(.*\)</image-tag>.*:\1:p' appinfo/info.xml)
image=ghcr.io/nextcloud-semantic-mcp/semantic_mcp
app_key=$( { docker image inspect -f '{{.Id}}' semantic-mcp-base:bookworm; sha256sum "$frp_dir/frpc";
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
  rm -rf "$mirror/$frp" && mkdir -p "$mirror/$frp" "$mirror/frp/v0.61.1" && cp "$frp_dir/frpc" "$mirror/$frp/"
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
