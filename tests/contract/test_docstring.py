"""Docstrings read as docstring_parser reads them, also where the parser is skipped."""

from __future__ import annotations

import inspect

import docstring_parser
from hypothesis import given
from hypothesis import strategies as st

from codeact.contract._docstring import parse_docstring

# one line with no ":" or "@": what parse_docstring reads without the parser
PLAIN_LINES = st.text(
    alphabet=st.characters(blacklist_characters=":@\n", blacklist_categories=("Cs",)),
    max_size=80,
)


@given(PLAIN_LINES)
def test_a_plain_line_reads_as_the_parser_reads_it(doc: str) -> None:
    parsed = docstring_parser.parse(inspect.cleandoc(doc))
    parts = (parsed.short_description, parsed.long_description)
    read = parse_docstring(doc)
    assert read.description == "\n\n".join(p.strip() for p in parts if p and p.strip())
    assert not parsed.params
    assert read.params == {}
    assert parsed.returns is None
    assert read.returns is None


def test_sections_in_every_style_are_still_read() -> None:
    styles = {
        "google": "Add.\n\nArgs:\n    a: the first.\n\nReturns:\n    the sum.",
        "rest": "Add.\n\n:param a: the first.\n:returns: the sum.",
        "numpy": "Add.\n\nParameters\n----------\na : int\n    the first.\n\n"
        "Returns\n-------\nint\n    the sum.",
        "epydoc": "Add.\n\n@param a: the first.\n@return: the sum.",
    }
    for style, doc in styles.items():
        read = parse_docstring(doc)
        assert read.description == "Add.", style
        assert read.params == {"a": "the first."}, style
        assert read.returns == "the sum.", style
    # one line that is a section of its own is read by the parser, not taken as text
    assert parse_docstring(":param a: the first.").params == {"a": "the first."}
