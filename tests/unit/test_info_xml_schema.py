"""appinfo/info.xml against what the app store accepts.

The app store validates an uploaded release's info.xml with its schema
(nextcloud/appstore: nextcloudappstore/api/v1/release/info.xsd). That schema is not ours to ship,
so CI runs the structural check below, written from it; with ``INFO_XSD`` pointing at a copy of the
schema, the file is also validated against it (lxml).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fake_nextcloud.exapp_process import REPO

INFO = REPO / "appinfo" / "info.xml"
# The order the schema's <xs:sequence> requires, for the elements we use (all optional ones omitted).
ORDER = ["id", "name", "summary", "description", "version", "licence", "author", "namespace", "documentation",
         "category", "website", "bugs", "repository", "screenshot", "dependencies", "external-app"]
# The app store's categories as its web pages list them; "ai" and "search" are newer than some
# published copies of the schema.
CATEGORIES = {"ai", "customization", "dashboard", "files", "games", "integration", "monitoring", "multimedia",
              "office", "organization", "search", "security", "social", "tools", "workflow"}
SEMVER = r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?"


def test_the_top_level_elements_come_in_the_schemas_order_with_valid_values() -> None:
    root = ET.parse(INFO).getroot()
    tags = [child.tag for child in root]
    assert [tag for tag in ORDER if tag in tags] == list(dict.fromkeys(tags)), tags
    assert re.fullmatch(r"[a-z]+[a-z0-9_]*[a-z0-9]+", root.findtext("id"))
    assert re.fullmatch(SEMVER, root.findtext("version"))
    assert root.findtext("licence") in {"agpl", "mpl", "apache"}
    assert all(0 < len(root.findtext(tag)) <= 128 for tag in ("name", "summary"))
    assert {c.text for c in root.findall("category")} <= CATEGORIES
    for tag in ("website", "bugs", "repository"):
        assert re.fullmatch(r"https?://.+", root.findtext(tag)) and len(root.findtext(tag)) <= 256
    nextcloud = root.find("dependencies/nextcloud")
    for bound in ("min-version", "max-version"):
        assert re.fullmatch(r"[0-9]+(\.[0-9]+){0,2}", nextcloud.get(bound)), bound


def test_documentation_and_screenshots_point_at_files_this_repository_holds() -> None:
    """The app store shows them from the repository's main branch: each must name a file that exists here."""
    root = ET.parse(INFO).getroot()
    repository = root.findtext("repository")
    raw = repository.replace("https://github.com/", "https://raw.githubusercontent.com/") + "/main/"
    documentation = {child.tag: child.text for child in root.find("documentation")}
    assert set(documentation) == {"user", "admin", "developer"}
    for url in documentation.values():
        assert url.startswith(repository + "/blob/main/") and (REPO / url.split("/blob/main/")[1]).is_file(), url
    screenshots = [element.text for element in root.findall("screenshot")]
    assert screenshots
    for url in screenshots:
        assert url.startswith(raw) and url.endswith(".png"), url
        assert (REPO / url[len(raw):]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", url


def test_the_external_app_section_names_an_image_and_routes_appapi_can_match() -> None:
    external = ET.parse(INFO).getroot().find("external-app")
    docker = external.find("docker-install")
    assert all(docker.findtext(tag) for tag in ("registry", "image", "image-tag"))
    routes = external.findall("routes/route")
    assert routes
    for route in routes:
        assert route.findtext("access_level") in {"PUBLIC", "USER", "ADMIN"}
        assert set(route.findtext("verb").split(",")) <= {"GET", "POST", "PUT", "DELETE"}
        re.compile(route.findtext("url"))  # AppAPI and HaRP both use it as a regular expression
    for variable in external.findall("environment-variables/variable"):
        assert variable.findtext("name") and variable.findtext("display-name")


def test_info_xml_validates_against_the_app_stores_schema() -> None:
    schema = os.environ.get("INFO_XSD")
    if not schema or not Path(schema).is_file():
        pytest.skip("INFO_XSD is not set to a copy of nextcloud/appstore's info.xsd (not shipped here)")
    from lxml import etree

    validator = etree.XMLSchema(etree.parse(schema))
    document = etree.parse(str(INFO))
    assert validator.validate(document), "\n".join(str(error) for error in validator.error_log)
