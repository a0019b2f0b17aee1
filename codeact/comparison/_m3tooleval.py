"""M3ToolEval's tools, implemented from their published descriptions, and its tasks.

Fixes of the upstream data, applied here: tools taking ``*args`` take one list
parameter instead (``values``, ``preferences``), since variadic arguments have no JSON
Schema form; the travel tools ``max``, ``min`` and ``sum`` are renamed ``max_value``,
``min_value`` and ``sum_values`` so they do not shadow Python's builtins in scripts;
travel locations are stored quoted upstream (``'"A"'``) and compared unquoted;
links and page names disagree on ``-`` and ``_`` (``/team/customer_support`` links to
the page ``/team/customer-support``), so the browser treats the two as one; the view
window (10 lines) is ours, the upstream size is not published;
``longest_decoded_string`` is excluded (it expects a length, an int, for a question
that asks for a message, and all three messages have the same length). The
translation tool's output format is not published; one-letter codes, with 'X' for an
incomplete trailing codon, agree with every expected output.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from typing_extensions import TypedDict

from ..contract._exceptions import ToolError
from ..contract._tool import Tool, tool
from ..sandbox._parsing import parse_expression
from ._compare import values_equal

EXCLUDED = frozenset({"message_decoder/longest_decoded_string"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Task:
    name: str
    domain: str
    instruction: str
    expected: Any


def load_tasks() -> list[Task]:
    """Every task of the published data, less the excluded ones."""
    raw = json.loads(
        resources.files(__package__).joinpath("data/m3tooleval_tasks.json").read_text()
    )
    return [
        Task(
            name=t["name"],
            domain=t["domain"],
            instruction=t["instruction"],
            expected=t["expected_output"],
        )
        for t in raw["tasks"]
        if t["name"] not in EXCLUDED
    ]


check = values_equal  # equal as values: numbers within 1e-6, tuples as lists


# message_decoder ---------------------------------------------------------------------------


@tool
def convert_hex_to_ascii(hex_string: str) -> str:
    """Converts a hexadecimal string to ASCII."""
    try:
        return bytes.fromhex(hex_string).decode("ascii")
    except ValueError as error:
        raise ToolError(f"not a hex-encoded ASCII string: {error}", "INVALID_ARGUMENTS") from None


@tool
def reverse_string(string: str) -> str:
    """Reverses a string."""
    return string[::-1]


@tool
def caesar_decode(message: str, shift: int) -> str:
    """Decodes a string using the Caesar cipher with the given shift."""
    out = []
    for char in message:
        if char.isalpha() and char.isascii():
            base = ord("A") if char.isupper() else ord("a")
            out.append(chr((ord(char) - base - shift) % 26 + base))
        else:
            out.append(char)
    return "".join(out)


@tool
def string_length(string: str) -> int:
    """Finds the length of a string."""
    return len(string)


@tool
def minimum_value(values: list[float]) -> float:
    """Finds the minimum value of a list of numbers."""
    return min(values)


@tool
def maximum_value(values: list[float]) -> float:
    """Finds the maximum value of a list of numbers."""
    return max(values)


# cryptobotanists_plant_dna_sequencer -----------------------------------------------------

_CODONS = {
    "AUG": "Methionine",
    "UUU": "Phenylalanine",
    "UUC": "Phenylalanine",
    "UUA": "Leucine",
    "UUG": "Leucine",
    "UCU": "Serine",
    "UCC": "Serine",
    "UCA": "Serine",
    "UCG": "Serine",
    "UAU": "Tyrosine",
    "UAC": "Tyrosine",
    "UGU": "Cysteine",
    "UGC": "Cysteine",
    "UGG": "Tryptophan",
    "CUU": "Leucine",
    "CUC": "Leucine",
    "CUA": "Leucine",
    "CUG": "Leucine",
    "CCU": "Proline",
    "CCC": "Proline",
    "CCA": "Proline",
    "CCG": "Proline",
    "CAU": "Histidine",
    "CAC": "Histidine",
    "CAA": "Glutamine",
    "CAG": "Glutamine",
    "CGU": "Arginine",
    "CGC": "Arginine",
    "CGA": "Arginine",
    "CGG": "Arginine",
    "AUU": "Isoleucine",
    "AUC": "Isoleucine",
    "AUA": "Isoleucine",
    "ACU": "Threonine",
    "ACC": "Threonine",
    "ACA": "Threonine",
    "ACG": "Threonine",
    "AAU": "Asparagine",
    "AAC": "Asparagine",
    "AAA": "Lysine",
    "AAG": "Lysine",
    "AGU": "Serine",
    "AGC": "Serine",
    "AGA": "Arginine",
    "AGG": "Arginine",
    "GUU": "Valine",
    "GUC": "Valine",
    "GUA": "Valine",
    "GUG": "Valine",
    "GCU": "Alanine",
    "GCC": "Alanine",
    "GCA": "Alanine",
    "GCG": "Alanine",
    "GAU": "Aspartic acid",
    "GAC": "Aspartic acid",
    "GAA": "Glutamic acid",
    "GAG": "Glutamic acid",
    "GGU": "Glycine",
    "GGC": "Glycine",
    "GGA": "Glycine",
    "GGG": "Glycine",
    "UAA": "Stop",
    "UAG": "Stop",
    "UGA": "Stop",
}


_ONE_LETTER = {
    "Alanine": "A",
    "Arginine": "R",
    "Asparagine": "N",
    "Aspartic acid": "D",
    "Cysteine": "C",
    "Glutamic acid": "E",
    "Glutamine": "Q",
    "Glycine": "G",
    "Histidine": "H",
    "Isoleucine": "I",
    "Leucine": "L",
    "Lysine": "K",
    "Methionine": "M",
    "Phenylalanine": "F",
    "Proline": "P",
    "Serine": "S",
    "Threonine": "T",
    "Tryptophan": "W",
    "Tyrosine": "Y",
    "Valine": "V",
    "Stop": "*",
}


@tool
def count_nucleotides(dna_sequence: str) -> dict[str, int]:
    """Counts the occurrences of each nucleotide in a DNA sequence."""
    counts: dict[str, int] = {}
    for base in dna_sequence:
        counts[base] = counts.get(base, 0) + 1
    return counts


@tool
def transcribe_dna_to_mrna(dna_sequence: str) -> str:
    """Transcribes a DNA sequence to mRNA, base by base to its complement."""
    return "".join({"A": "U", "T": "A", "C": "G", "G": "C"}.get(b, b) for b in dna_sequence)


@tool
def translate_mrna_to_amino_acid(mrna_sequence: str) -> str:
    """Translates mRNA to amino acids, a letter each ('X': incomplete codon, '*': stop)."""
    return "".join(
        _ONE_LETTER.get(_CODONS.get(mrna_sequence[i : i + 3], ""), "X")
        for i in range(0, len(mrna_sequence), 3)
    )


@tool
def find_max_nucleotide(counts: dict[str, int]) -> tuple[str, int]:
    """Returns the nucleotide with the maximum count, and that count."""
    if not counts:
        raise ToolError("no counts given", "INVALID_ARGUMENTS")
    best = max(counts, key=lambda base: counts[base])
    return best, counts[best]


@tool
def is_valid_dna_sequence(dna_sequence: str) -> bool:
    """Checks whether a DNA sequence holds only A, C, G and T."""
    return bool(dna_sequence) and set(dna_sequence) <= set("ACGT")


@tool
def reverse_transcribe_mrna_to_dna(mrna_sequence: str) -> str:
    """Reverse transcribes an mRNA sequence to DNA."""
    return "".join({"U": "A", "A": "T", "C": "G", "G": "C"}.get(b, b) for b in mrna_sequence)


# trade_calculator -------------------------------------------------------------------------

_OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 100 or abs(left) > 1e6):
            raise ToolError(
                "exponents are limited to 100 and bases to a million", "INVALID_ARGUMENTS"
            )
        return float(_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_evaluate(node.operand)))
    raise ToolError("only numbers, + - * / ** and parentheses are allowed", "INVALID_ARGUMENTS")


@tool
def convert_currency(base_price: float, conversion_rate: float) -> float:
    """Converts the commodity price to local currency."""
    return base_price * conversion_rate


@tool
def calculate_tariff(price: float, tariff_rate: float) -> float:
    """Calculates the trade tariff on a converted price; tariff_rate is in percent."""
    return price * tariff_rate / 100


@tool
def estimate_final_value(price: float, tariff: float) -> float:
    """Estimates the final trade value including the tariff."""
    return price + tariff


@tool
def calculator(expression: str) -> float:
    """Evaluates an arithmetic expression such as "2 + (3 * 4)"."""
    try:
        tree = parse_expression(expression)
    except SyntaxError:
        raise ToolError(
            f"not an arithmetic expression: {expression!r}", "INVALID_ARGUMENTS"
        ) from None
    return _evaluate(tree)


@tool
def find_minimum(values: list[float]) -> float:
    """Finds the minimum of a list of numbers."""
    return min(values)


@tool
def find_maximum(values: list[float]) -> float:
    """Finds the maximum of a list of numbers."""
    return max(values)


# travel_itinerary_planning ----------------------------------------------------------------


def _travel_tables() -> dict[str, Any]:
    raw = json.loads(
        resources.files(__package__).joinpath("data/m3tooleval_travel_tables.json").read_text()
    )
    tables: dict[str, Any] = raw["tables"]
    return tables


def _place(name: str) -> str:
    """Locations are stored quoted upstream ('"A"'); compare them unquoted."""
    return name.strip().strip('"')


class FlightOffer(TypedDict):
    from_location: str
    to_location: str
    date: str
    price: float


class HotelOffer(TypedDict):
    location: str
    preferences: list[str]
    price_per_night: float
    rating: int


@tool
def find_flights(from_location: str, to_location: str, date: str) -> list[FlightOffer]:
    """Finds flights from one location to another on a date (YYYY-MM-DD), in listing order."""
    return [
        {
            "from_location": _place(f["from_location"]),
            "to_location": _place(f["to_location"]),
            "date": f["date"],
            "price": f["price"],
        }
        for f in _travel_tables()["flights"]
        if _place(f["from_location"]) == _place(from_location)
        and _place(f["to_location"]) == _place(to_location)
        and f["date"] == date
    ]


@tool
def book_hotel(location: str, preferences: list[str] | None = None) -> list[HotelOffer]:
    """Finds hotels in a location offering every preference given ("wifi", "pool", "gym")."""
    wanted = set(preferences or [])
    return [
        {
            "location": _place(h["location"]),
            "preferences": list(h["preferences"]),
            "price_per_night": h["price_per_night"],
            "rating": h["rating"],
        }
        for h in _travel_tables()["hotels"]
        if _place(h["location"]) == _place(location) and wanted <= set(h["preferences"])
    ]


@tool
def budget_calculator(flight_price: float, hotel_price_per_night: float, num_nights: int) -> float:
    """Total budget of a trip: the flight plus the hotel for the nights."""
    return flight_price + hotel_price_per_night * num_nights


@tool
def max_value(values: list[float]) -> float:
    """The largest of a list of numbers."""
    return max(values)


@tool
def min_value(values: list[float]) -> float:
    """The smallest of a list of numbers."""
    return min(values)


@tool
def sum_values(values: list[float]) -> float:
    """The sum of a list of numbers."""
    return sum(values)


# web_browsing -------------------------------------------------------------------------------

VIEW_LINES = 10


def _pages() -> dict[str, str]:
    text = resources.files(__package__).joinpath("data/m3tooleval_web_pages.jsonl").read_text()
    pages = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {_slug(p["name"]): p["content"] for p in pages}


def _slug(url: str) -> str:
    """Links and page names disagree on '-' and '_' upstream; treat them as one."""
    return url.strip().replace("-", "_")


def browser_tools() -> list[Tool]:
    """A fresh browser (its own page, history and scroll position) and its tools."""
    pages = _pages()
    state: dict[str, Any] = {"page": "/", "offset": 0, "history": []}

    def render() -> str:
        lines = pages[state["page"]].splitlines()
        start = state["offset"]
        shown = lines[start : start + VIEW_LINES]
        footer = "\n[more below: scroll_down()]" if start + VIEW_LINES < len(lines) else ""
        header = f"[page {state['page']}, lines {start + 1}-{start + len(shown)} of {len(lines)}]"
        return "\n".join([header, *shown]) + footer

    @tool
    def click_url(url: str) -> str:
        """Clicks a URL shown as [Clickable '<url>'] in the current view; returns the new view."""
        if f"[Clickable '{url}']" not in render():
            raise ToolError(f"{url!r} is not clickable in the current view", "INVALID_ARGUMENTS")
        if _slug(url) not in pages:
            raise ToolError(f"{url!r} leads nowhere (page not found)")
        state["history"].append(state["page"])
        state["page"], state["offset"] = _slug(url), 0
        return render()

    @tool
    def go_to_previous_page() -> str:
        """Goes back to the previous page; returns its view."""
        if not state["history"]:
            raise ToolError("there is no previous page", "INVALID_ARGUMENTS")
        state["page"], state["offset"] = state["history"].pop(), 0
        return render()

    @tool
    def scroll_down() -> str:
        """Scrolls the view down; returns the new view."""
        total = len(pages[state["page"]].splitlines())
        state["offset"] = min(state["offset"] + VIEW_LINES, max(total - VIEW_LINES, 0))
        return render()

    @tool
    def scroll_up() -> str:
        """Scrolls the view up; returns the new view."""
        state["offset"] = max(state["offset"] - VIEW_LINES, 0)
        return render()

    @tool
    def view() -> str:
        """The current view of the page."""
        return render()

    return [click_url, go_to_previous_page, scroll_down, scroll_up, view, calculator]


def domain_tools(domain: str) -> list[Tool]:
    """The tools of a domain; stateful ones are made fresh for each run."""
    return browser_tools() if domain == "web_browsing" else list(DOMAIN_TOOLS[domain])


DOMAIN_TOOLS: dict[str, list[Tool]] = {
    "message_decoder": [
        convert_hex_to_ascii,
        reverse_string,
        caesar_decode,
        string_length,
        minimum_value,
        maximum_value,
    ],
    "cryptobotanists_plant_dna_sequencer": [
        count_nucleotides,
        transcribe_dna_to_mrna,
        translate_mrna_to_amino_acid,
        find_max_nucleotide,
        is_valid_dna_sequence,
        reverse_transcribe_mrna_to_dna,
    ],
    "travel_itinerary_planning": [
        find_flights,
        book_hotel,
        budget_calculator,
        max_value,
        min_value,
        sum_values,
    ],
    "trade_calculator": [
        convert_currency,
        calculate_tariff,
        estimate_final_value,
        calculator,
        find_minimum,
        find_maximum,
    ],
}

__all__ = ["DOMAIN_TOOLS", "EXCLUDED", "Task", "check", "domain_tools", "load_tasks"]
