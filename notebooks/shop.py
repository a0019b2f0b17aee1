"""A small shop's tools and five questions about it, for comparing styles on "your own
tools" (notebooks/your_own_tools.ipynb). Nothing here is codeact's: it is what a user
would write."""

from __future__ import annotations

from codeact import ComparisonTask, ToolRegistry, tool

STOCK = {"A1": 12, "A2": 3, "B1": 0, "B2": 7, "C1": 4}
PRICES_EUR = {"A1": 2.5, "A2": 4.0, "B1": 1.2, "B2": 3.0, "C1": 9.9}
CATEGORIES = {"fruit": ["A1", "A2", "B1"], "dairy": ["B2", "C1"]}


@tool
def list_skus(category: str) -> list[str]:
    """The product codes (SKUs) of a category: "fruit" or "dairy"."""
    return CATEGORIES.get(category, [])


@tool
def stock(sku: str) -> int:
    """Units of a product in stock."""
    return STOCK[sku]


@tool
def price(sku: str, currency: str = "EUR") -> float:
    """A product's unit price, in EUR or USD."""
    rate = 1.0 if currency == "EUR" else 1.1
    return round(PRICES_EUR[sku] * rate, 2)


@tool
def reorder(sku: str, quantity: int) -> str:
    """Order more of a product; returns the order's number."""
    return f"PO-{sku}-{quantity}"


def shop_tools(task: ComparisonTask | None = None) -> ToolRegistry:
    registry = ToolRegistry()
    for made in (list_skus, stock, price, reorder):
        registry.register(made)
    return registry


def mentions_orders(answer: str) -> bool:
    """Task 5 is right when the answer names both orders placed (A2 and B1)."""
    return "PO-A2-10" in answer and "PO-B1-10" in answer


TASKS = [
    ComparisonTask(name="stock-a1", prompt="How many units of A1 are in stock?", expected=12),
    ComparisonTask(name="value-a1", prompt="What is the stock value of A1 in EUR?", expected=30.0),
    ComparisonTask(
        name="most-fruit",
        prompt="Which fruit SKU has the most units in stock?",
        expected="A1",
        tags=("search",),
    ),
    ComparisonTask(
        name="fruit-units",
        prompt="How many units of fruit are in stock in total?",
        expected=15,
        tags=("search",),
    ),
    ComparisonTask(
        name="reorder-low",
        prompt="Reorder 10 units of every fruit SKU with fewer than 5 in stock; "
        "give the order numbers.",
        check=mentions_orders,
        tags=("search", "side effect"),
    ),
]
