"""A stand-in for the Anthropic Python SDK, for memtool's binding tests: the
SDK itself cannot be installed on the test machines (no PyPI access).

Only what the binding and its example use is here, under the SDK's names and
signatures (anthropics/anthropic-sdk-python): lib/tools (the tool base
classes and ToolError), and Anthropic / AsyncAnthropic with
beta.messages.tool_runner(...), whose runner handles tool_use blocks as the
SDK's does (src/anthropic/lib/tools/_beta_runner.py): each block's input to
the tool's call(); a result as {"type": "tool_result", "tool_use_id", "content"};
a ToolError as its content with "is_error": True; any other exception as its
repr with "is_error": True. The HTTP side is a plain urllib POST.
"""
import asyncio
import json
import os
import urllib.request
from typing import Any, Dict, Iterator, List, Optional

from .lib.tools import ToolError


class _Obj:
    """A response object with attribute access (the SDK's models; a tool_use
    block's input stays a dict, as BetaToolUseBlock.input is Dict[str, object])."""

    def __init__(self, raw: Dict[str, Any]) -> None:
        self._raw = raw
        for k, v in raw.items():
            if isinstance(v, dict) and k != "input":
                v = _Obj(v)
            elif isinstance(v, list):
                v = [_Obj(x) if isinstance(x, dict) else x for x in v]
            setattr(self, k, v)

    def to_dict(self) -> Dict[str, Any]:
        return self._raw


def _post(client: "Anthropic", body: Dict[str, Any], betas: Optional[List[str]]) -> Dict[str, Any]:
    headers = {"x-api-key": client.api_key, "anthropic-version": "2023-06-01",
               "content-type": "application/json"}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    req = urllib.request.Request(client.base_url.rstrip("/") + "/v1/messages",
                                 data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


class _Runner:
    def __init__(self, client: Any, params: Dict[str, Any], betas: Optional[List[str]],
                 max_iterations: Optional[int]) -> None:
        self._client = client
        self._params = params
        self._betas = betas
        self._max_iterations = max_iterations
        self._tools = {t.name: t for t in params.pop("tools_objects")}
        self._done = False
        self._last: Optional[_Obj] = None

    def _body(self) -> Dict[str, Any]:
        return dict(self._params, tools=[t.to_dict() for t in self._tools.values()])

    def _uses(self, message: Dict[str, Any]) -> List[Dict[str, Any]]:
        self._params["messages"].append({"role": "assistant", "content": message["content"]})
        return [b for b in message["content"] if b.get("type") == "tool_use"]

    @staticmethod
    def _error(use: Dict[str, Any], exc: BaseException) -> Dict[str, Any]:
        content = exc.content if isinstance(exc, ToolError) else repr(exc)
        return {"type": "tool_result", "tool_use_id": use["id"], "content": content,
                "is_error": True}


class BetaToolRunner(_Runner):
    def __iter__(self) -> Iterator[_Obj]:
        count = 0
        while not self._done:
            if self._max_iterations is not None and count >= self._max_iterations:
                break
            count += 1
            message = _post(self._client, self._body(), self._betas)
            self._last = _Obj(message)
            yield self._last
            uses = self._uses(message)
            if not uses:
                self._done = True
                break
            results = []
            for use in uses:
                try:
                    result = self._tools[use["name"]].call(use["input"])
                    results.append({"type": "tool_result", "tool_use_id": use["id"],
                                    "content": result})
                except Exception as exc:
                    results.append(self._error(use, exc))
            self._params["messages"].append({"role": "user", "content": results})

    def until_done(self) -> _Obj:
        for _ in self:
            pass
        assert self._last is not None
        return self._last


class BetaAsyncToolRunner(_Runner):
    async def __aiter__(self):  # type: ignore[no-untyped-def]
        while not self._done:
            message = await asyncio.get_running_loop().run_in_executor(
                None, _post, self._client, self._body(), self._betas)
            self._last = _Obj(message)
            yield self._last
            uses = self._uses(message)
            if not uses:
                self._done = True
                break
            results = []
            for use in uses:
                try:
                    result = await self._tools[use["name"]].call(use["input"])
                    results.append({"type": "tool_result", "tool_use_id": use["id"],
                                    "content": result})
                except Exception as exc:
                    results.append(self._error(use, exc))
            self._params["messages"].append({"role": "user", "content": results})

    async def until_done(self) -> _Obj:
        async for _ in self:
            pass
        assert self._last is not None
        return self._last


class _Messages:
    def __init__(self, client: Any, runner: type) -> None:
        self._client = client
        self._runner = runner

    def tool_runner(self, *, max_tokens: int, messages: List[Dict[str, Any]], model: str,
                    tools: List[Any], max_iterations: Optional[int] = None,
                    betas: Optional[List[str]] = None, system: Optional[str] = None) -> Any:
        params: Dict[str, Any] = {"model": model, "max_tokens": max_tokens,
                                  "messages": list(messages), "tools_objects": list(tools)}
        if system is not None:
            params["system"] = system
        return self._runner(self._client, params, betas, max_iterations)


class _Beta:
    def __init__(self, client: Any, runner: type) -> None:
        self.messages = _Messages(client, runner)


class Anthropic:
    def __init__(self, *, api_key: Optional[str] = None, base_url: Optional[str] = None) -> None:
        self.api_key = api_key or os.environ["ANTHROPIC_API_KEY"]
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL",
                                                   "https://api.anthropic.com")
        self.beta = _Beta(self, BetaToolRunner)


class AsyncAnthropic(Anthropic):
    def __init__(self, *, api_key: Optional[str] = None, base_url: Optional[str] = None) -> None:
        super().__init__(api_key=api_key, base_url=base_url)
        self.beta = _Beta(self, BetaAsyncToolRunner)
