"""Put frp's client (frpc) on PATH at build time, from frp's release for the target architecture.
Python only, so the image needs no curl. FRP_RELEASES may point at a local mirror of the same
layout (the offline test build serves one it built from frp's source)."""

import io
import os
import platform
import sys
import tarfile
import urllib.request
from pathlib import Path

VERSION = "0.61.1"  # the version HaRP's README pins for ExApps
ARCHES = {"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64"}


def main(target_arch: str, destination: Path) -> None:
    releases = os.environ.get("FRP_RELEASES") or "https://github.com/fatedier/frp/releases/download"
    name = f"frp_{VERSION}_linux_{ARCHES[target_arch or platform.machine()]}"
    with urllib.request.urlopen(f"{releases}/v{VERSION}/{name}.tar.gz", timeout=120) as response:
        archive = tarfile.open(fileobj=io.BytesIO(response.read()), mode="r:gz")
    destination.write_bytes(archive.extractfile(f"{name}/frpc").read())
    destination.chmod(0o755)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
