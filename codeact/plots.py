"""The usual pictures of a :class:`codeact.Comparison` (needs matplotlib:
``pip install 'codeact[notebook]'``).

Each style keeps one colour in every plot (``STYLE_COLOURS``), so figures side by side
read the same way. Each function draws on ``ax`` (a new figure's when None) and returns
the axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .comparison._compare import Comparison

if TYPE_CHECKING:
    from matplotlib.axes import Axes

STYLE_COLOURS = {
    "native": "#4c72b0",
    "native-parallel": "#55a868",
    "code": "#c44e52",
    "both": "#8172b2",
}
OTHER_COLOURS = ("#937860", "#da8bc3", "#8c8c8c", "#ccb974")
LABELS = {
    "success": "success rate",
    "round_trips": "model round trips",
    "tool_calls": "tool calls",
    "errors": "errors",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "seconds": "seconds",
}


def colour(style: str, styles: tuple[str, ...] = ()) -> str:
    """The style's colour (a style codeact does not name gets one by its position)."""
    if style in STYLE_COLOURS:
        return STYLE_COLOURS[style]
    others = [s for s in styles if s not in STYLE_COLOURS]
    index = others.index(style) if style in others else 0
    return OTHER_COLOURS[index % len(OTHER_COLOURS)]


def plot_styles(comparison: Comparison, metric: str = "success", ax: Axes | None = None) -> Axes:
    """One bar per style: the metric's mean over runs, with its 95% bootstrap interval."""
    axes = ax if ax is not None else _new_axes()
    summary = comparison.summary()
    styles = list(comparison.styles)
    means = [summary[s][metric].mean for s in styles]
    below = [summary[s][metric].mean - summary[s][metric].low for s in styles]
    above = [summary[s][metric].high - summary[s][metric].mean for s in styles]
    axes.bar(
        styles,
        means,
        yerr=[below, above],
        capsize=4,
        color=[colour(s, comparison.styles) for s in styles],
    )
    axes.set_ylabel(LABELS.get(metric, metric))
    axes.set_title(f"{LABELS.get(metric, metric)} per style (95% interval)")
    return axes


def plot_paired(
    comparison: Comparison,
    metric: str = "round_trips",
    left: str | None = None,
    right: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Each task as a line between its value in ``left`` and in ``right`` (the first two
    styles unless named): the paired view the summary's differences come from."""
    axes = ax if ax is not None else _new_axes()
    first = left or comparison.styles[0]
    second = right or comparison.styles[1]
    a, b = comparison.per_task(first, metric), comparison.per_task(second, metric)
    tasks = [task for task in a if task in b]
    for task in tasks:
        axes.plot([0, 1], [a[task], b[task]], color="#bbbbbb", linewidth=0.8, zorder=1)
    axes.scatter([0] * len(tasks), [a[t] for t in tasks], color=colour(first), zorder=2)
    axes.scatter([1] * len(tasks), [b[t] for t in tasks], color=colour(second), zorder=2)
    axes.set_xticks([0, 1], [first, second])
    axes.set_xlim(-0.5, 1.5)
    difference = comparison.paired(first, second, metric)
    axes.set_title(f"{LABELS.get(metric, metric)} per task: {first} - {second} = {difference}")
    axes.set_ylabel(LABELS.get(metric, metric))
    return axes


def plot_tokens_vs_round_trips(comparison: Comparison, ax: Axes | None = None) -> Axes:
    """Every run as a point: prompt tokens against round trips, coloured by style."""
    axes = ax if ax is not None else _new_axes()
    for style in comparison.styles:
        rows = [r for r in comparison.records if r.style == style]
        axes.scatter(
            [r.round_trips for r in rows],
            [r.prompt_tokens for r in rows],
            label=style,
            color=colour(style, comparison.styles),
            alpha=0.7,
        )
    axes.set_xlabel("model round trips")
    tokenizers = sorted({r.tokenizer for r in comparison.records})
    axes.set_ylabel(f"prompt tokens ({', '.join(tokenizers)})")
    axes.legend()
    return axes


def _new_axes() -> Any:
    import matplotlib.pyplot as plt

    _, axes = plt.subplots(figsize=(6, 3.5))
    return axes


__all__ = [
    "STYLE_COLOURS",
    "colour",
    "plot_paired",
    "plot_styles",
    "plot_tokens_vs_round_trips",
]
