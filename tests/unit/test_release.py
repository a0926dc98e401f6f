"""The release files (issue 38): the licence info.xml names, a changelog section for info.xml's version, the
app store archive `make appstore` builds (what the release workflow uploads on a tag), and the workflow's tag
check against info.xml."""

from __future__ import annotations

import re
import subprocess
import tarfile
import xml.etree.ElementTree as ET

import yaml

from fake_nextcloud.exapp_process import REPO

INFO = ET.parse(REPO / "appinfo" / "info.xml").getroot()
VERSION = INFO.findtext("version")


def test_the_licence_is_the_agpl_info_xml_names() -> None:
    assert INFO.findtext("licence") == "agpl"
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("GNU AFFERO GENERAL PUBLIC LICENSE") and "Version 3, 19 November 2007" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a notice


def test_the_changelog_has_a_section_for_this_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(VERSION)}\]", changelog, re.M), VERSION


def test_make_appstore_builds_the_archive_the_app_store_takes(tmp_path) -> None:
    built = subprocess.run(["make", "--no-print-directory", "appstore"], cwd=REPO, capture_output=True, text=True,
                           timeout=60)
    assert built.returncode == 0, built.stderr
    archive = REPO / built.stdout.strip().splitlines()[-1]
    assert archive.name == f"semantic_mcp-{VERSION}.tar.gz"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        assert {name.split("/")[0] for name in names} == {"semantic_mcp"}  # one folder named as the app id
        packed = tar.extractfile("semantic_mcp/appinfo/info.xml").read()
    assert packed == (REPO / "appinfo" / "info.xml").read_bytes()
    raw = "/main/"
    for screenshot in INFO.findall("screenshot"):
        assert "semantic_mcp/" + screenshot.text.split(raw, 1)[1] in names


def test_the_workflow_publishes_on_a_version_tag_matching_info_xml() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML reads the key "on" as true
    steps = "\n".join(str(step.get("run", "")) for step in workflow["jobs"]["image"]["steps"])
    assert '"$GITHUB_REF_NAME" != "v$version"' in steps  # a tag that is not v<info.xml version> publishes nothing
    assert workflow["jobs"]["appstore"]["needs"] == "image"
    assert any("make --no-print-directory appstore" in str(step.get("run", ""))
               for step in workflow["jobs"]["appstore"]["steps"])
    assert INFO.find("external-app/docker-install").findtext("image-tag") == VERSION
