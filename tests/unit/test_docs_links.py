"""The documentation holds together (issue 38): every relative link in README.md, docs/ and bench/README.md
names a file (and, with a #fragment, a heading) that exists, and every client snippet parses as the JSON, TOML
or YAML its client reads, with VS Code's ${input:…} variables declared in its "inputs"."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from fake_nextcloud.exapp_process import REPO

PAGES = [REPO / "README.md", REPO / "bench" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# Pages other branches of this release write (issue 38 links them from the README's index): a link to one may
# be ahead of its page until the branches are merged. Remove a name once its page is in.
WRITTEN_ELSEWHERE: set[str] = set()  # pages another branch of a release writes, skipped until merged
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _without_code(text: str) -> str:
    return FENCE.sub("", re.sub(r"`[^`\n]*`", "", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in FENCE.sub("", page.read_text()).splitlines() if line.startswith("#")}


def relative_links() -> list[tuple[Path, str]]:
    return [(page, target) for page in PAGES for target in LINK.findall(_without_code(page.read_text()))
            if not re.match(r"[a-z]+:", target)]


def test_there_are_links_to_check() -> None:
    assert len(relative_links()) > 30  # the README's index alone has more


@pytest.mark.parametrize(("page", "target"), relative_links(), ids=lambda v: str(v).replace(str(REPO) + "/", ""))
def test_every_relative_link_resolves(page: Path, target: str) -> None:
    path, _, fragment = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.exists() and str(resolved.relative_to(REPO)) in WRITTEN_ELSEWHERE:
        pytest.skip(f"{path}: written on another branch of this release")
    assert resolved.exists(), f"{page.relative_to(REPO)} links to {target}, which does not exist"
    if fragment and resolved.suffix == ".md":
        assert fragment in anchors(resolved), f"{page.relative_to(REPO)}: no heading #{fragment} in {path or 'itself'}"


def snippets() -> list[tuple[str, str, str]]:
    return [(str(page.relative_to(REPO)), language, body) for page in PAGES
            for language, body in FENCE.findall(page.read_text()) if language in ("json", "toml", "yaml")]


def test_the_readme_and_the_clients_page_have_snippets_of_each_kind() -> None:
    for page in ("README.md", "docs/clients.md"):
        assert {language for name, language, _ in snippets() if name == page} == {"json", "toml", "yaml"}, page


@pytest.mark.parametrize(("page", "language", "body"), snippets(), ids=lambda v: v if len(v) < 30 else "")
def test_every_client_snippet_parses(page: str, language: str, body: str) -> None:
    parsed = {"json": json.loads, "toml": tomllib.loads, "yaml": yaml.safe_load}[language](body)
    assert isinstance(parsed, dict) and parsed
    text = json.dumps(parsed)
    declared = {entry["id"] for entry in parsed.get("inputs", [])}
    assert set(re.findall(r"\$\{input:([^}]+)\}", text)) <= declared, "VS Code needs an inputs entry for each"
    urls = re.findall(r"https?://[^\"' ]+/mcp\b", text)
    assert all(u.endswith("/index.php/apps/app_api/proxy/semantic_mcp/mcp") for u in urls), urls


def test_the_readmes_commands_are_the_ones_that_work() -> None:
    readme = (REPO / "README.md").read_text()
    for line in readme.splitlines():
        if "fake_nextcloud.try_mcp" in line:
            assert "--url " in line, "without --url try_mcp assumes port 8080, which the demo may not have"
    assert len(readme.splitlines()) <= 250
