"""The comparison plots draw what the summary says, each style in its one colour."""

from __future__ import annotations

import anyio
import matplotlib

matplotlib.use("Agg")  # no display: drawing only

import matplotlib.pyplot as plt
from matplotlib.colors import to_hex

from codeact import compare
from codeact.plots import (
    STYLE_COLOURS,
    plot_paired,
    plot_styles,
    plot_tokens_vs_round_trips,
)
from codeact.suite import STYLES, planned_model, suite_tasks, suite_tools


def test_each_style_keeps_its_colour_and_the_bars_show_the_summary() -> None:
    comparison = anyio.run(
        lambda: compare(
            suite_tasks()[:6], tools=suite_tools, model=planned_model, styles=STYLES, progress=False
        )
    )
    figure, (bars, paired, scatter) = plt.subplots(1, 3)
    try:
        plot_styles(comparison, "round_trips", ax=bars)
        plot_paired(comparison, "round_trips", "native", "code", ax=paired)
        plot_tokens_vs_round_trips(comparison, ax=scatter)
        summary = comparison.summary()
        drawn = {
            tick.get_text(): patch
            for tick, patch in zip(bars.get_xticklabels(), bars.patches, strict=True)
        }
        for style in STYLES:
            assert to_hex(drawn[style].get_facecolor()) == STYLE_COLOURS[style]
            assert drawn[style].get_height() == summary[style]["round_trips"].mean
        points = {
            collection.get_label(): to_hex(collection.get_facecolor()[0])
            for collection in scatter.collections
        }
        assert points == {style: STYLE_COLOURS[style] for style in STYLES}
        left, right = paired.collections  # native's dots, then code's
        assert to_hex(left.get_facecolor()[0]) == STYLE_COLOURS["native"]
        assert to_hex(right.get_facecolor()[0]) == STYLE_COLOURS["code"]
        assert "native - code" in paired.get_title()
    finally:
        plt.close(figure)
