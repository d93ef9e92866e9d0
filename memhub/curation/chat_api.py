"""One chat-completions call to an OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LiteLLM...), for the hub's
optional LLM steps: the consolidation summariser and the write-time fact extractor.

It POSTs ``{"model", "messages", "temperature": 0}`` to ``{base_url}/chat/completions`` and returns the
assistant's text. Every failure (unreachable, slow, refused, an HTTP error, a reply that is not a chat
completion) raises ChatError with a message that names the endpoint and what to do, never the prompt (which
holds memory content).
"""

from __future__ import annotations

import os
from typing import Any

import httpx


class ChatError(Exception):
    """The endpoint did not give a usable answer; the message says why and what to change."""


class ChatCompletions:
    """A client for one endpoint and model. The API key comes from the environment variable named by
    ``api_key_env`` (never from a file or a command line); without it no Authorization header is sent (local
    servers need none). ``what`` names the client in errors ("summariser", "extractor"); ``timeout_hint`` says
    what to do when the endpoint is too slow."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        what: str,
        api_key_env: str,
        timeout_s: float,
        timeout_hint: str,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model must be a non-empty model name")
        if not 0 < timeout_s <= 600:
            raise ValueError(f"timeout_s must be between 0 and 600 seconds, got {timeout_s}")
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._what = what
        self._api_key_env = api_key_env
        self._timeout = timeout_s
        self._timeout_hint = timeout_hint
        headers = {"content-type": "application/json"}
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if key:
            headers["authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def complete(self, system: str, user: str, *, json_object: bool = False) -> str:
        """The assistant's text for one system + user message, stripped. ``json_object`` asks for a JSON object
        (``response_format``; servers that ignore it are fine: the caller parses what comes back)."""
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if json_object:
            body["response_format"] = {"type": "json_object"}
        name = f"{self._what} endpoint {self.url}"
        try:
            resp = self._client.post(self.url, json=body)
        except httpx.TimeoutException:
            raise ChatError(f"{name} did not answer within {self._timeout:g} s ({self._timeout_hint})") from None
        except httpx.HTTPError as exc:
            raise ChatError(f"{name} unreachable ({type(exc).__name__})") from None
        if resp.status_code in (401, 403):
            raise ChatError(
                f"{name} refused the request (HTTP {resp.status_code}); set its API key in the environment "
                f"variable {self._api_key_env}"
            )
        if resp.status_code != 200:
            raise ChatError(f"{name} answered HTTP {resp.status_code}: {resp.text[:200]!r}")
        hint = "check that the base URL points at an OpenAI-compatible chat-completions API (usually ending in /v1)"
        try:
            payload: Any = resp.json()
            text = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):  # RecursionError: nesting too deep
            raise ChatError(f"{name} answered something that is not a chat completion; {hint}") from None
        if not isinstance(text, str):
            raise ChatError(f"{name} answered a message without text content; {hint}")
        if "\x00" in text:
            raise ChatError(f"{name} answered text with a NUL character")
        return text.strip()

    def close(self) -> None:
        self._client.close()
