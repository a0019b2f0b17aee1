"""One line of a worker's channel: a message as compact JSON, newline-terminated.

Both ends encode every message with one C encoder made at import: ``json.dumps`` with
any option builds a ``JSONEncoder`` and its C encoder again for each message, a few
microseconds of every tool call's round trip.
"""

from __future__ import annotations

import json
from typing import Any


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps(message, ensure_ascii=False, separators=(",", ":")), made once. It keeps no
# record of the containers it is in (markers None): no state between calls, so threads
# share it; a value that holds itself ends as RecursionError, refused below.
_ENCODE = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, _refuse, json.encoder.encode_basestring, None, ":", ",", False, False, True
)


def encoded(message: dict[str, Any]) -> bytes:
    """``message`` as one line of the channel."""
    try:
        text = "".join(_ENCODE(message, 0))
    except RecursionError:
        raise ValueError("a message that holds itself, or nests too deep to encode") from None
    return text.encode() + b"\n"


__all__ = ["encoded"]
