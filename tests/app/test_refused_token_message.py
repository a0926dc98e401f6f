"""A token or app password the app does not accept is refused in one sentence that says where to make a
new one (issue 35, item 5)."""

from __future__ import annotations

import httpx

from stack import Stack


def test_an_unknown_token_is_refused_with_where_to_make_an_app_password(stack: Stack) -> None:
    refused = httpx.post(stack.mcp_url, json={}, headers={"Authorization": "Bearer not-a-password"})
    assert refused.status_code == 401
    assert refused.json()["error_description"] == (
        "The password or token was not accepted; make a new app password in Nextcloud under "
        "Personal settings → Security → Devices & sessions, or reconnect the client.")
