"""appinfo/info.xml is what an app-store install runs with: its environment defaults must start the app."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fake_nextcloud.exapp_process import REPO
from semantic_mcp.config import Deployment


def test_the_environment_defaults_of_info_xml_are_accepted() -> None:
    root = ET.parse(REPO / "appinfo" / "info.xml").getroot()
    env = {var.findtext("name"): var.findtext("default") or "" for var in root.iter("variable")}
    assert "SEARCH_FUSION" in env
    deployment = Deployment.from_env({**env, "APP_PERSISTENT_STORAGE": "/tmp/x"})
    assert deployment.search_fusion == env["SEARCH_FUSION"]
