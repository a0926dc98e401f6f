"""What AppAPI makes of an ExApp's ``appinfo/info.xml``: its routes, how the proxy matches them, and
the container environment an app-store install deploys it with.

Route matching follows AppAPI 34.0.0 (``ExAppProxyController::passesExAppProxyRoutesChecks``, the
same in 35): the pattern becomes ``~^(?:url)~i`` and is tried against ``'/' + path`` first, then
(a deprecated fallback) against the bare path; the FIRST route whose path and verb match decides,
and when its access level fails the caller gets 404 even if a later route would let them in.
AppAPI up to 32.0.9 (and 33.0.0-33.0.3) matched ``'/' . url . '/i'`` against the bare path:
an unescaped ``/`` ends PHP's pattern there and the route never matches; a route whose access
level fails is skipped. Both rules are here so a test can hold info.xml's routes to both.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
INFO_XML = REPO / "appinfo" / "info.xml"
ACCESS_LEVELS = {"PUBLIC": 0, "USER": 1, "ADMIN": 2}


def info_xml(path: Path = INFO_XML) -> ET.Element:
    return ET.parse(path).getroot()


def app_version() -> str:
    return info_xml().findtext("version") or "0.0.0"


def routes_from_info_xml(path: Path = INFO_XML) -> list[dict[str, Any]]:
    """The routes exactly as info.xml declares them (what an app store install registers). The
    JSON lists stay strings, as they arrive from XML."""
    return [
        {
            "url": route.findtext("url"),
            "verb": route.findtext("verb"),
            "access_level": ACCESS_LEVELS[route.findtext("access_level", "USER")],
            "headers_to_exclude": route.findtext("headers_to_exclude", "[]"),
            "bruteforce_protection": route.findtext("bruteforce_protection", "[]"),
        }
        for route in info_xml(path).iter("route")
    ]


def deploy_env_from_info_xml(path: Path = INFO_XML) -> dict[str, str]:
    """The ``environment-variables`` an app-store install puts into the container, as AppAPI 34.0.0
    computes them (``ExAppService::getAppInfo`` then ``DockerActions::buildDeployEnvs``).

    getAppInfo turns the XML into arrays through ``json_decode(json_encode(simplexml))``: an empty
    ``<default></default>`` becomes ``[]``, which ``?? ''`` keeps and the ``!== ''`` filter does not
    drop, and ``sprintf('%s=%s')`` then writes the PHP array as the string ``Array`` (checked on a
    real 34.0.1; fixed in AppAPI 35 by ``ExAppEnvVarsHelper``). An absent ``<default>`` is ``''``
    and the variable is left out.
    """
    env = {}
    for variable in info_xml(path).iter("variable"):
        default = variable.find("default")
        if default is None:
            continue
        value = "Array" if default.text is None and len(default) == 0 else default.text or ""
        if value != "":
            env[str(variable.findtext("name"))] = value
    return env


def _php_pattern_ends_early(url: str) -> bool:
    """Does an unescaped ``/`` end a pattern written between ``/`` delimiters?"""
    escaped = False
    for char in url:
        if char == "/" and not escaped:
            return True
        escaped = char == "\\" and not escaped
    return False


def path_matches_appapi_32(url: str, path: str) -> bool:
    """AppAPI <= 32.0.9: ``preg_match('/' . url . '/i', path)`` on the path without its leading slash."""
    if _php_pattern_ends_early(url):
        return False  # PHP warns "Unknown modifier" and preg_match returns false
    try:
        return re.search(url, path, re.IGNORECASE) is not None
    except re.error:
        return False


def path_matches_appapi_34(url: str, path: str) -> bool:
    """AppAPI 34/35: ``~^(?:url)~i`` against ``'/' + path``, then against the bare path."""
    try:
        pattern = re.compile(f"^(?:{url})", re.IGNORECASE)
    except re.error:
        return False
    return pattern.search("/" + path) is not None or pattern.search(path) is not None


def match_route(
    routes: list[dict], path: str, method: str, allowed: Callable[[dict], bool], *, appapi: int = 34
) -> dict | None:
    """The route AppAPI proxies ``method path`` through, or None (404). ``allowed`` says whether the
    caller passes a route's access level. ``appapi`` picks the rule: 34 (and 35) or 32."""
    matches = path_matches_appapi_34 if appapi >= 34 else path_matches_appapi_32
    for route in routes:
        if not matches(str(route.get("url", "")), path):
            continue
        if method.lower() not in str(route.get("verb", "")).lower():
            continue
        if appapi >= 34:
            return route if allowed(route) else None  # the first match decides
        if allowed(route):
            return route
    return None


def json_info(secret: str, port: int, *, daemon: str = "manual_install") -> dict[str, Any]:
    """What ``occ app_api:app:register --json-info`` takes for a manual install, from info.xml."""
    root = info_xml()
    return {
        "id": root.findtext("id"), "name": root.findtext("name"), "daemon_config_name": daemon,
        "version": app_version(), "secret": secret, "port": port, "routes": routes_from_info_xml(),
    }

