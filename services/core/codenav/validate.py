"""Text a request may carry: no NUL bytes and no invalid Unicode (lone surrogates).

Postgres refuses both in text, and neither has a meaning in a path, a name or a query, so
they are refused at the door with a clear 400 (REST: the request models; MCP: the tool
arguments) instead of failing deep inside with a 500.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator

from codenav.errors import InvalidRequest


def problem(value: str) -> str | None:
    """What is wrong with ``value`` as text, or None."""
    if "\x00" in value:
        return "contains a NUL byte"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (it holds a lone surrogate)"
    return None


def check_text(value: str, where: str) -> str:
    found = problem(value)
    if found:
        raise InvalidRequest(f"{where} {found}", hint="send plain UTF-8 text")
    return value


def check_value(value: Any, where: str) -> None:
    """Every string in ``value`` (and in the lists and mappings it holds)."""
    if isinstance(value, str):
        check_text(value, where)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if isinstance(key, str):
                check_text(key, f"the key of {name}")
            check_value(item, name)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_value(item, f"{where}[{i}]")


class StrictModel(BaseModel):
    """A request body: unknown fields refused, every string checked (a 400 naming the
    field, over REST and MCP alike)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _plain_text(cls, value: Any) -> Any:
        try:
            check_value(value, "")
        except InvalidRequest as exc:  # becomes the field's validation error
            raise ValueError(exc.message.strip() + "; send plain UTF-8 text") from None
        return value


def _text(value: str) -> str:
    found = problem(value)
    if found:
        raise ValueError(f"{found}; send plain UTF-8 text")
    return value


Text = Annotated[str, AfterValidator(_text)]
"""A string parameter outside a body (a path or query parameter)."""


def invalid(errors: Sequence[Any]) -> InvalidRequest:
    """The first of a failed validation's ``errors()`` as one clear line: ``field: what``
    (REST's 400 and MCP's tool error say the same)."""
    first: Any = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    what = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    message = f"{where}: {what}" if where else what
    return InvalidRequest(message.encode("utf-8", "replace").decode())
