"""A full reconciliation keeps the skipped rows of files that are still there.

Listings leave out the files this app does not index (types without text, Nextcloud's example
files, excluded paths), yet an event can record such a file as skipped. A full pass used to take
every skipped row missing from its listing for a deletion, so the status tool's skipped count
dropped at each full pass and came back with the next event. A skipped file is gone only when
Nextcloud no longer lists it at all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from semantic_mcp.core.documents import DocRef
from semantic_mcp.indexing.reconcile import reconcile_source
from semantic_mcp.indexing.state import IndexState
from semantic_mcp.nextcloud.client import NextcloudClient
from semantic_mcp.sources import make_sources

from fake_nextcloud import FakeNextcloud
from fixtures_fake_nextcloud import fake_nc  # noqa: F401  (fixture)

USER = "dana"


@pytest.fixture
async def nc(fake_nc: FakeNextcloud) -> AsyncIterator[NextcloudClient]:  # noqa: F811
    fake_nc.add_user(USER, "Dana")
    client = NextcloudClient(fake_nc.url, lambda user: fake_nc.auth_headers(user))
    yield client
    await client.aclose()


async def test_a_skipped_file_still_there_survives_a_full_pass(
    fake_nc: FakeNextcloud, nc: NextcloudClient, tmp_path: Path  # noqa: F811
) -> None:
    state = IndexState(tmp_path / "state.db")
    source = make_sources()["file"]
    fake_nc.put_file(USER, "/Reports/report.txt", "A report worth indexing.")
    picture = str(fake_nc.put_file(USER, "/Photos/cat.bin", bytes(range(256)) * 8))
    # What the webhook path leaves for a file without text: a skipped row, no document.
    state.record_skipped(DocRef(USER, "file", picture), "etag", "no text")

    result = await reconcile_source(state, nc, source, USER, full_every=3600, force_full=True)
    assert result.queued_deletes == 0, "a file still in Nextcloud was queued for removal"
    assert picture not in state.queued(USER, "file")
    assert picture in state.skipped_versions(USER, "file")

    fake_nc.delete(USER, "/Photos/cat.bin")
    result = await reconcile_source(state, nc, source, USER, full_every=3600, force_full=True)
    assert result.queued_deletes == 1  # gone from Nextcloud: its row goes too
    assert picture in state.queued(USER, "file")
