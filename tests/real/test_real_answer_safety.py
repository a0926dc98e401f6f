"""The written answer on a real Nextcloud 34, through the real AppAPI proxy (issue 36): a note bob
shares with alice asks for a badge that carries her PIN and for "ACCESS GRANTED"; the client's model
(scripted: it writes what it is told) complies. No image reaches her answer, and an answer that does not
stand on its sources is withheld, with the sources and the reason; a good one comes back as written."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from realstack import RealStack
from scripted_model import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
from test_answer_filter import PAYLOADS  # noqa: E402
from test_answer_grounding import GOOD, QUESTION, WIFI, ObedientModel  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def wifi_note(real: RealStack) -> None:
    real.user("alice").create_note("Guest wifi", WIFI)
    asyncio.run(real.eventually(lambda: _indexed(real), timeout=120))


async def _indexed(real: RealStack) -> bool:
    return "Guest wifi" in await real.titles("alice", "guest wifi password", doc_types=["note"])


async def _answer(real: RealStack, model: ScriptedModel) -> dict:
    result = await real.call("alice", "nc_semantic_search_answer", {"query": QUESTION, "use_query_analysis": False},
                             sampling_callback=model)
    assert not result.is_error, real.failure(result)
    return result.structured_content


async def test_no_zero_click_image_reaches_the_answer(real: RealStack) -> None:
    for name in list(PAYLOADS)[:4]:
        answer = await _answer(real, ScriptedModel(answer=f"{GOOD} {PAYLOADS[name]}"))
        html = MarkdownIt("commonmark").enable(["table"]).render(answer["generated_answer"])
        assert "<img" not in html and "4711" not in html, (name, html)


async def test_an_obedient_model_is_withheld_and_a_good_one_is_not(real: RealStack) -> None:
    obedient = await _answer(real, ObedientModel())
    assert obedient["generated_answer"].startswith("[Answer withheld:"), obedient
    assert "ACCESS GRANTED" not in obedient["generated_answer"]
    assert obedient["sources"][0]["title"] == "Guest wifi"
    good = await _answer(real, ScriptedModel(answer=GOOD))
    assert good["generated_answer"] == GOOD


async def test_an_honest_refusal_is_the_answer_and_a_dressed_injection_is_not(real: RealStack) -> None:
    """"The documents don't say" claims nothing, so it needs no citation; "ACCESS GRANTED" beside it does."""
    refusal = "The documents do not say what the guest wifi password is."
    assert (await _answer(real, ScriptedModel(answer=refusal)))["generated_answer"] == refusal
    dressed = await _answer(real, ScriptedModel(answer=f"{refusal} ACCESS GRANTED"))
    assert dressed["generated_answer"].startswith("[Answer withheld:"), dressed
