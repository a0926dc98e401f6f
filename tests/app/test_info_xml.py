"""appinfo/info.xml is what an app-store install runs with: its routes must reach every path the app
serves behind AppAPI's proxy (and nothing else) under every AppAPI's matching rule, and its
environment defaults must start the app as AppAPI deploys them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ex_app.oauth_http import OAuthHTTP
from ex_app.upkeep import SELF_CHECK_PATH, WEBHOOK_PATH
from fake_nextcloud.appinfo import (
    INFO_XML,
    deploy_env_from_info_xml,
    match_route,
    path_matches_appapi_32,
    path_matches_appapi_34,
    routes_from_info_xml,
)
from fake_nextcloud.exapp_process import ExAppProcess
from semantic_mcp.core.config import Deployment, DeploymentError


def _served_behind_the_proxy() -> list[tuple[str, str]]:
    """(method, path) of every handler reached through AppAPI's proxy, read from the app's own routes."""
    issuer = "http://cloud.example.com/index.php/apps/app_api/proxy/semantic_mcp"
    server = SimpleNamespace(issuer=issuer, public_url="http://cloud.example.com", clock=lambda: 0.0)
    oauth = OAuthHTTP(server, b"k")  # type: ignore[arg-type]
    served = [(method, route.path) for route in oauth.routes() for method in route.methods - {"HEAD"}]
    return served + [("GET", SELF_CHECK_PATH)] + [(method, "/mcp") for method in ("GET", "POST", "DELETE")]


def _public(route: dict) -> bool:
    return route["access_level"] == 0


@pytest.mark.parametrize("appapi", [32, 34])
def test_every_path_the_app_serves_matches_exactly_one_route_and_nothing_else_does(appapi: int) -> None:
    """AppAPI 34/35 and HaRP match "/" + path (the first matching route decides); AppAPI up to
    32.0.9 matched the bare path. info.xml's routes must work under both."""
    routes = routes_from_info_xml()
    matches = path_matches_appapi_34 if appapi == 34 else path_matches_appapi_32
    served = _served_behind_the_proxy()
    assert len(served) == 15
    for method, path in served:
        bare = path.lstrip("/")
        assert match_route(routes, bare, method, _public, appapi=appapi) is not None, (method, path)
        assert sum(matches(route["url"], bare) for route in routes) == 1, path  # no overlap to order by
    not_ours = ["heartbeat", "init", "enabled", WEBHOOK_PATH.lstrip("/"), "mcpx", "api/mcp", "mcp/",
                ".well-known/other", ".well-known/oauth-protected-resource/other", "oauth/tokens", "oauth",
                "x/oauth/token", "MCP/../admin"]
    for path in not_ours:
        assert not any(matches(route["url"], path) for route in routes), path
    assert match_route(routes, "oauth/token", "GET", _public, appapi=appapi) is None  # POST only
    assert match_route(routes, "mcp", "PUT", _public, appapi=appapi) is None


def test_the_two_matching_rules_differ_where_the_readme_says() -> None:
    """The rules themselves, as read in AppAPI's ExAppProxyController (32.0.0 and 34.0.0)."""
    assert path_matches_appapi_34("^/mcp$", "mcp") and not path_matches_appapi_32("^/mcp$", "mcp")  # "/" ends it
    assert path_matches_appapi_34("^mcp$", "mcp") and path_matches_appapi_32("^mcp$", "mcp")  # 34's fallback
    assert path_matches_appapi_32(r"^\/?mcp$", "mcp")  # an escaped "/" keeps PHP's pattern whole
    assert path_matches_appapi_32("mcp", "api/mcp") and not path_matches_appapi_34("mcp", "api/mcp")  # anchored
    assert path_matches_appapi_34("^/MCP$", "mcp")  # case-insensitive in both
    first_admin_then_public = [{"url": "^/?admin", "verb": "GET", "access_level": 2},
                               {"url": ".*", "verb": "GET", "access_level": 0}]
    assert match_route(first_admin_then_public, "admin", "GET", _public, appapi=34) is None  # 404 for a user
    assert match_route(first_admin_then_public, "admin", "GET", _public, appapi=32)["access_level"] == 0


OLD_INFO_XML = """<?xml version="1.0"?>
<info><id>semantic_mcp</id><external-app><environment-variables>
  <variable><name>CHROMA_HOST</name><display-name>Chroma</display-name><default></default></variable>
  <variable><name>NEXTCLOUD_PUBLIC_URL</name><default/></variable>
  <variable><name>CHROMA_PORT</name><default>8000</default></variable>
  <variable><name>UNSET</name><display-name>No default at all</display-name></variable>
</environment-variables></external-app></info>
"""


def test_an_empty_default_deploys_as_array_as_appapi_34_does_and_an_absent_one_is_left_out(tmp_path: Path) -> None:
    old = tmp_path / "info.xml"
    old.write_text(OLD_INFO_XML)
    assert deploy_env_from_info_xml(old) == {"CHROMA_HOST": "Array", "NEXTCLOUD_PUBLIC_URL": "Array",
                                             "CHROMA_PORT": "8000"}
    with pytest.raises(DeploymentError, match="CHROMA_HOST='Array'"):
        Deployment.from_env(deploy_env_from_info_xml(old))


def test_the_environment_info_xml_deploys_is_accepted() -> None:
    env = deploy_env_from_info_xml(INFO_XML)
    assert "Array" not in env.values() and env["SEARCH_FUSION"] == "calibrated"
    # The install dialog offers nothing the image cannot honour: the cross-encoder's package is not in it.
    assert "SEARCH_RERANK" not in env
    deployment = Deployment.from_env({**env, "APP_PERSISTENT_STORAGE": "/tmp/x"})
    assert deployment.search_fusion == "calibrated" and deployment.chroma_host is None and deployment.public_url is None


@pytest.mark.parametrize(("name", "value", "why"), [
    ("CHROMA_HOST", "Array", "AppAPI before Nextcloud 35"),
    ("CHROMA_HOST", "http://chroma:8000", "not a host name"),
    ("CHROMA_HOST", "chroma db", "not a host name"),
    ("CHROMA_PORT", "Array", "AppAPI before Nextcloud 35"),
    ("CHROMA_PORT", "80000", "not a port number"),
    ("NEXTCLOUD_PUBLIC_URL", "Array", "AppAPI before Nextcloud 35"),
    ("NEXTCLOUD_PUBLIC_URL", "cloud.example.com", "not an http"),
    ("NEXTCLOUD_PUBLIC_URL", "https://cloud.example.com:port", "not an http"),
    ("APP_LOG_LEVEL", "Array", "AppAPI before Nextcloud 35"),
    ("NEXTCLOUD_AI_RECHECK_SECONDS", "soon", "not a number of seconds"),
    ("CHROMA_MEMORY_MB", "-1", "not a whole number"),
    ("RETRY_SECONDS", "-2", "not a number of seconds"),
])
def test_a_value_that_cannot_be_what_it_names_is_a_start_up_error_naming_it(name: str, value: str, why: str) -> None:
    with pytest.raises(DeploymentError, match=why) as refused:
        Deployment.from_env({name: value})
    assert str(refused.value).startswith(f"{name}=")


def test_hosts_and_urls_an_admin_would_give_are_accepted() -> None:
    for host in ("chroma", "chroma.internal.example", "10.0.0.7", "fd00::7", "nc_app_chroma"):
        assert Deployment.from_env({"CHROMA_HOST": host, "CHROMA_PORT": "8001"}).chroma_host == host
    assert Deployment.from_env({"CHROMA_MEMORY_MB": "0"}).chroma_memory_mb == 0  # 0: never reopen
    for url in ("https://cloud.example.com/", "http://10.0.0.2:8080/nextcloud", "https://[fd00::2]"):
        assert Deployment.from_env({"NEXTCLOUD_PUBLIC_URL": url}).public_url == url.rstrip("/")


def test_the_app_started_with_a_bad_value_exits_with_a_message_naming_it(tmp_path: Path) -> None:
    """As the container started by an app-store install with the old info.xml: no traceback to decode."""
    app = ExAppProcess("http://127.0.0.1:9", tmp_path / "storage", env={"CHROMA_HOST": "Array"})
    with pytest.raises(RuntimeError, match="ExApp exited with 1"):
        app.start(timeout=120)
    assert "Semantic MCP cannot start: CHROMA_HOST='Array'" in app.log_text()
    assert "Traceback" not in app.log_text()
