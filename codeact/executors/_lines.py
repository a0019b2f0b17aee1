"""One line of a worker's channel: a message as compact JSON, newline-terminated.

Both ends encode every message with one C encoder made at import, and read it with the C
scanner: ``json.dumps`` with any option builds a ``JSONEncoder`` and its C encoder again
for each message, and ``json.loads`` of bytes passes through four Python functions before
the scanner; each a microsecond or two of every tool call's round trip.
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


# json.loads, without its detection of UTF-16 and UTF-32: a line is UTF-8 and holds one
# value (JSON's whitespace around it allowed, as json.loads allows it).
_WHITESPACE = " \t\n\r"
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[attr-defined]


def decoded(line: bytes) -> Any:
    """The value of one line (without its newline); ValueError for anything but one JSON
    value in UTF-8, RecursionError for one nested deeper than the decoder's stack."""
    text = line.decode().strip(_WHITESPACE)  # invalid UTF-8: a ValueError too
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        raise ValueError("a line that does not start with a JSON value") from None
    if end != len(text):
        raise ValueError("a line with more than one JSON value")
    return value


__all__ = ["decoded", "encoded"]
