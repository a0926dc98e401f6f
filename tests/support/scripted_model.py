"""A sampling callback standing in for the client's LLM, shared by the fake and real tiers.

It answers each kind of request the app makes (query analysis, re-ranking, answer writing) the way
a real model would, and records what it was asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

ANSWER_TEXT = "Your next dentist appointment is with Dr. Weber next week [1]."


class ScriptedModel:
    """A sampling callback standing in for the client's LLM."""

    def __init__(self, *, analysis: str | None = None, rerank: str | None = None, answer: str = ANSWER_TEXT,
                 delay: float = 0.0, fail: str | None = None,
                 on_first: dict[str, Callable[[], None]] | None = None) -> None:
        self.on_first = dict(on_first or {})  # kind -> what happens in Nextcloud while the model writes
        self.analysis = analysis
        self.rerank = rerank
        self.answer = answer
        self.delay = delay
        self.fail = fail  # "decline" | "raise"
        self.requests: list[tuple[str, CreateMessageRequestParams]] = []

    @staticmethod
    def kind(params: CreateMessageRequestParams) -> str:
        system = params.system_prompt or ""
        if "search filters" in system:
            return "analysis"
        if "rank search results" in system:
            return "rerank"
        return "answer"

    async def __call__(self, context: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        kind = self.kind(params)
        self.requests.append((kind, params))
        if kind in self.on_first:
            self.on_first.pop(kind)()
        if self.delay:
            await anyio.sleep(self.delay)
        if self.fail == "decline":
            return ErrorData(code=-1, message="User rejected the sampling request")
        if self.fail == "raise":
            raise RuntimeError("model backend down")
        text = {"analysis": self.analysis, "rerank": self.rerank, "answer": self.answer}[kind]
        if text is None:
            text = "{}" if kind == "analysis" else "[]"
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text),
                                   model="scripted-model", stop_reason="endTurn")

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.requests]

    def prompt(self, kind: str) -> str:
        params = next(p for k, p in self.requests if k == kind)
        return params.messages[0].content.text
