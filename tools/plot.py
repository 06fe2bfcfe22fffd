"""``recordio bench --plot out.png``: the benchmark's ratios against their baselines, one bar each.

One horizontal bar per result that was compared with a baseline (``ratio`` = value / baseline's
value, so longer is better for rates; rows whose unit is a time say "lower is better"), coloured
by suite, labelled ``name (vs baseline)`` and with its ratio written at the end of the bar; a
dashed line marks parity (1x); a bar is drawn at least 1.5% of the axis long, so that a ratio far
below the largest still shows (its written ratio is exact). Results without a ratio are left out; when none has one, the
picture says so. matplotlib draws it with the Agg backend (no display needed).
"""

import textwrap

from recordio.extras import requires

SUITE_COLOURS = {"storage": "#1f77b4", "pipeline": "#2ca02c", "vision": "#ff7f0e", "sink": "#9467bd",
                 "convert": "#d62728", "cold": "#8c564b"}
OTHER_COLOUR = "#7f7f7f"
BAR_HEIGHT_IN = 0.36    # figure inches per bar (room for a label wrapped onto two lines)
WIDTH_IN = 10.0
DPI = 100
LABEL_WIDTH = 60        # characters a label line holds
MIN_BAR = 0.015         # the shortest bar drawn, as a fraction of the axis: ratios far below the largest stay visible


def compared(results):
    """The results that have a finite, positive ratio, in their order."""
    rows = []
    for row in results:
        ratio = row.get("ratio")
        if isinstance(ratio, (int, float)) and ratio == ratio and 0 < ratio < float("inf"):
            rows.append(row)
    return rows


TIME_UNITS = ("s", "ms", "us", "ns")


def label(row):
    """``name (vs baseline)``; a time (lower is better) is marked so."""
    baseline = row.get("baseline")
    text = f"{row['name']} (vs {baseline})" if baseline else str(row["name"])
    text = text + ", lower is better" if row.get("unit") in TIME_UNITS else text
    return textwrap.fill(text, LABEL_WIDTH)          # a long name wraps instead of narrowing the axis


def colour(row):
    return SUITE_COLOURS.get(row.get("suite"), OTHER_COLOUR)


def _figure(rows):
    with requires("recordio bench --plot"):
        import matplotlib

    matplotlib.use("Agg", force=False)
    with requires("recordio bench --plot"):
        from matplotlib.figure import Figure

    height = max(2.0, 1.2 + BAR_HEIGHT_IN * len(rows))
    return Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")


def _draw_bars(ax, rows):
    positions = range(len(rows))
    ratios = [float(r["ratio"]) for r in rows]
    right = max(ratios + [1.0]) * 1.15
    drawn = [max(v, right * MIN_BAR) for v in ratios]        # a tiny ratio still shows (its label is exact)
    bars = ax.barh(positions, drawn, color=[colour(r) for r in rows], height=0.7)
    ax.set_yticks(list(positions), [label(r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, zorder=0)   # behind the bars
    ax.bar_label(bars, [f"{v:.2f}x" for v in ratios], padding=3, fontsize=8)
    ax.set_xlim(0, right)
    ax.set_xlabel("ratio to the baseline (value / baseline value; > 1 is better for rates)")


def _legend(ax, rows):
    with requires("recordio bench --plot"):
        from matplotlib.patches import Patch

    suites = list(dict.fromkeys(r.get("suite") for r in rows))
    handles = [Patch(color=SUITE_COLOURS.get(s, OTHER_COLOUR), label=str(s)) for s in suites]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="suite")


def plot_ratios(results, png):
    """Draw the ratios of ``results`` (rows of ``recordio bench``) into the PNG file ``png``.

    Returns the number of bars drawn.
    """
    rows = compared(results)
    fig = _figure(rows)
    ax = fig.add_subplot()
    if rows:
        _draw_bars(ax, rows)
        _legend(ax, rows)
        ax.set_title("recordio against its baselines")
    else:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no result was compared with a baseline", ha="center", va="center")
    fig.savefig(png, format="png")
    return len(rows)
