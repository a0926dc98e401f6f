"""The admin's life cycle through AppAPI and HaRP, in the order an admin meets it (tests run in order).

Update to a new image tag keeps the index (nothing re-embedded) and the OAuth clients; a container
restart and a ``docker kill`` lose nothing; disable/enable; unregister keeps the data volume and a
reinstall uses it; ``--rm-data`` removes it and the next install starts clean.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from fake_nextcloud.exapp_process import APP_ID
from harpstack import CONTAINER, INFO_XML, VOLUME, HarpStack, docker

NOTES = [("Gannet colony count", "Gannets on Bass Rock: 150,000 pairs counted from the boat in June."),
         ("Lapwing nest map", "Lapwing nests mapped along the dike: forty-two, most near the sluice."),
         ("Curlew tagging plan", "Curlew tagging: six birds, GPS tags of five grams, permit from the ministry.")]


def issuer(harp: HarpStack) -> str:
    return f"{harp.nextcloud_url}/index.php/apps/app_api/proxy/{APP_ID}"


def newly_embedded(harp: HarpStack) -> int:
    """Chunks the app container's embedder computed, from its log lines (one per indexing batch)."""
    return sum(int(n) for n in re.findall(r"(\d+) newly embedded", harp.log()))


def indexed(harp: HarpStack) -> set[tuple]:
    return set(harp.db_rows("SELECT user, doc_type, source_id, version, chunk_count FROM documents"))


def token_error(harp: HarpStack, client_id: str) -> str:
    """The token endpoint's verdict on a made-up code: invalid_grant for a client it knows."""
    answer = httpx.post(f"{issuer(harp)}/oauth/token", data={
        "grant_type": "authorization_code", "code": "not-a-code", "code_verifier": "v" * 43,
        "redirect_uri": "http://127.0.0.1:8765/callback", "client_id": client_id}, timeout=30)
    return answer.json()["error"]


async def finds(harp: HarpStack, note: tuple[str, str], timeout: float = 120) -> None:
    async def found() -> bool:
        try:
            return note[0] in await harp.titles("alice", note[1], doc_types=["note"])
        except Exception:  # noqa: BLE001 - the app may still be starting
            return False

    await harp.eventually(found, timeout=timeout, interval=1.0)


@pytest.fixture(scope="module", autouse=True)
def first_note(harp: HarpStack) -> None:
    harp.user("alice").create_note(*NOTES[0])
    asyncio.run(finds(harp, NOTES[0]))
    yield
    harp.nc.occ("security:bruteforce:reset", "127.0.0.1", check=False)


def test_an_update_to_a_new_image_tag_keeps_the_index_and_the_oauth_clients(harp: HarpStack, tmp_path: Path) -> None:
    client_id = httpx.post(f"{issuer(harp)}/oauth/register", json={
        "client_name": "Kept across updates", "redirect_uris": ["http://127.0.0.1:8765/callback"],
        "token_endpoint_auth_method": "none"}, timeout=30).json()["client_id"]
    assert token_error(harp, client_id) == "invalid_grant"
    asyncio.run(harp.settled())
    before = indexed(harp)
    old_image = docker("inspect", "-f", "{{.Image}}", CONTAINER)
    # A new image (another ID, as a release would be) under the next tag, and info.xml naming it.
    new_tag = "0.1.1-test"
    (tmp_path / "Dockerfile").write_text(f"FROM {harp.image}\nLABEL org.opencontainers.image.version={new_tag}\n")
    repository = harp.image.rsplit(":", 1)[0]
    subprocess.run(["docker", "build", "-q", "-t", f"{repository}:{new_tag}", str(tmp_path)], check=True,
                   capture_output=True, env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/sbin:/usr/bin:/usr/local/bin"})
    info = INFO_XML.read_text()
    info = re.sub(r"<image-tag>[^<]*</image-tag>", f"<image-tag>{new_tag}</image-tag>", info)
    info = re.sub(r"<version>[^<]*</version>", "<version>0.1.1</version>", info, count=1)
    (tmp_path / "info.xml").write_text(info)

    harp.update(tmp_path / "info.xml")

    assert docker("inspect", "-f", "{{.Config.Image}}", CONTAINER).endswith(f":{new_tag}")
    assert docker("inspect", "-f", "{{.Image}}", CONTAINER) != old_image
    assert harp.init_status()["init"] == 100
    asyncio.run(finds(harp, NOTES[0]))
    assert indexed(harp) == before
    assert newly_embedded(harp) == 0  # the new container's whole log
    assert token_error(harp, client_id) == "invalid_grant"
    assert token_error(harp, "never-registered") == "invalid_client"


def test_a_container_restart_loses_nothing(harp: HarpStack) -> None:
    before = indexed(harp)
    docker("restart", CONTAINER)
    HarpStack.wait_healthy(CONTAINER, timeout=120)
    asyncio.run(finds(harp, NOTES[0]))
    assert indexed(harp) == before


def test_a_killed_container_started_again_loses_nothing(harp: HarpStack) -> None:
    """Killed (SIGKILL) right after a note is written, while its event may be in flight or indexing."""
    harp.user("alice").create_note(*NOTES[1])
    harp.flush_events(60)
    before = {row for row in indexed(harp) if row[2] != "pending"}
    docker("kill", CONTAINER)
    docker("start", CONTAINER)  # Docker keeps a killed container down (its policy is unless-stopped)
    HarpStack.wait_healthy(CONTAINER, timeout=120)
    asyncio.run(finds(harp, NOTES[1]))
    asyncio.run(finds(harp, NOTES[0]))
    after = indexed(harp)
    assert before <= after and len({row[:3] for row in after}) == len(after)


def test_disable_then_enable_serves_again_and_catches_up(harp: HarpStack) -> None:
    harp.nc.occ("app_api:app:disable", APP_ID)
    assert not harp.app_state()["enabled"]
    assert httpx.post(harp.mcp_url, json={}, timeout=30).status_code != 401  # the app no longer answers
    harp.nc.occ("app_api:app:enable", APP_ID)
    assert harp.app_state()["enabled"]
    harp.wait_enabled()
    HarpStack.wait_healthy(CONTAINER, timeout=120)
    asyncio.run(finds(harp, NOTES[1]))


def test_unregister_keeps_the_volume_and_a_reinstall_uses_it(harp: HarpStack) -> None:
    before = indexed(harp)
    harp.unregister()
    assert docker("ps", "-a", "-q", "-f", f"name=^{CONTAINER}$") == ""
    assert docker("volume", "ls", "-q", "-f", f"name=^{VOLUME}$") == VOLUME
    harp.install()
    assert harp.init_status()["init"] == 100
    asyncio.run(finds(harp, NOTES[1]))
    assert {row[:3] for row in before} <= {row[:3] for row in indexed(harp)}
    assert newly_embedded(harp) == 0


def test_unregister_with_rm_data_removes_the_volume_and_the_next_install_starts_clean(harp: HarpStack) -> None:
    harp.unregister("--rm-data")
    assert docker("volume", "ls", "-q", "-f", f"name=^{VOLUME}$") == ""
    harp.install()
    assert harp.init_status()["init"] == 100
    asyncio.run(finds(harp, NOTES[0]))
    assert newly_embedded(harp) > 0  # everything indexed afresh into the new volume
