"""Pictures of a scholar summary: co-author network and publication timeline (PNG).

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend switch, safe
in worker threads). Both pictures are built from a ``ScholarSummaryResult`` alone, so the CLI
and the Slack app render exactly what the summary says.

* ``coauthors.png``: the scholar in the centre, the top co-authors on a circle (most shared
  papers at the top, then clockwise), edge width and node size growing with the number of
  shared papers, thin grey lines between co-authors who also wrote together. Labels sit
  outside the circle, aligned away from it, so they never overlap the nodes or each other.
* ``timeline.png``: papers per year stacked by theme (recent themes; older papers placed into
  them by similarity, the rest under "Other topics"), legend beside the plot.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from retrieval.errors import StorageError
from retrieval.results import Coauthor, ScholarSummaryResult
from retrieval.text import fold

MAX_NETWORK_PEOPLE = 12
DPI = 150
CENTRE_COLOUR = "#c0392b"
COAUTHOR_COLOUR = "#2e86c1"
EDGE_COLOUR = "#34495e"
LINK_COLOUR = "#b3b6b7"
PALETTE = ["#2e86c1", "#e67e22", "#27ae60", "#8e44ad", "#c0392b", "#16a085", "#d4ac0d", "#7f8c8d"]
OTHER_COLOUR = "#bfc9ca"


def _slug(name: str) -> str:
    return re.sub(r"\s+", "-", fold(name)) or "scholar"


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=DPI, bbox_inches="tight", facecolor="white")
    except OSError as exc:
        raise StorageError(
            f"Cannot write the picture {path}: {exc.strerror or exc}.",
            hint="Pass a writable directory to --plot.",
        ) from None
    return path


def _width(shared: int, most: int, thin: float = 1.0, thick: float = 7.0) -> float:
    return thin + (thick - thin) * (shared - 1) / max(1, most - 1) if most > 1 else thin + 1.0


def network_people(summary: ScholarSummaryResult) -> list[Coauthor]:
    """The co-authors on the circle: the scholar is the centre, never one of them (no self-edge,
    whatever the data says), and two co-authors of one name are two nodes (keyed by person id)."""
    own = summary.person_id
    return [c for c in summary.coauthors if not (own and c.person_id == own)][:MAX_NETWORK_PEOPLE]


def render_network(summary: ScholarSummaryResult, path: Path) -> Path:
    """The co-author network PNG (see the module docstring)."""
    people = network_people(summary)
    most = max((c.shared for c in people), default=1)
    figure = Figure(figsize=(9.5, 8))
    ax = figure.add_subplot()
    ax.set_aspect("equal")
    ax.set_anchor("N")
    ax.axis("off")
    # keyed by person id: two co-authors may share a name (ids are absent only in old results)
    position: dict[str, tuple[float, float]] = {}
    count = len(people)
    for i, coauthor in enumerate(people):
        angle = math.pi / 2 - 2 * math.pi * i / max(1, count)
        position[coauthor.person_id or coauthor.name] = (math.cos(angle), math.sin(angle))
    for link in summary.coauthor_links:
        a, b = link.a_id or link.a, link.b_id or link.b
        if a in position and b in position and a != b:
            (x1, y1), (x2, y2) = position[a], position[b]
            ax.plot([x1, x2], [y1, y2], color=LINK_COLOUR, linewidth=0.6 + 0.6 * link.shared, zorder=1)
    for coauthor in people:
        x, y = position[coauthor.person_id or coauthor.name]
        ax.plot([0, x], [0, y], color=EDGE_COLOUR, linewidth=_width(coauthor.shared, most), alpha=0.75, zorder=2)
    for coauthor in people:
        x, y = position[coauthor.person_id or coauthor.name]
        ax.scatter([x], [y], s=180 + 420 * coauthor.shared / most, color=COAUTHOR_COLOUR,
                   edgecolors="white", linewidths=1.5, zorder=3)
        ha = "left" if x > 0.15 else "right" if x < -0.15 else "center"
        va = "bottom" if y > 0.15 else "top" if y < -0.15 else "center"
        label = f"{coauthor.name} ({coauthor.shared})"
        ax.text(1.2 * x, 1.2 * y, label, ha=ha, va=va, fontsize=10, zorder=4)
    ax.scatter([0], [0], s=1400, color=CENTRE_COLOUR, edgecolors="white", linewidths=2, zorder=5)
    ax.text(0, -0.2, summary.scholar.name, ha="center", va="top", fontsize=12, fontweight="bold", zorder=6,
            bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": CENTRE_COLOUR, "alpha": 0.9})
    ax.set_xlim(-2.0, 2.0)
    ax.set_ylim(-1.4, 1.45)
    shown = f"top {count} of {summary.coauthor_count}" if summary.coauthor_count > count else f"all {count}"
    figure.suptitle(f"Co-authors of {summary.scholar.name}", fontsize=15, fontweight="bold")
    ax.set_title(f"{shown} co-authors in the index; (n) and line width = shared papers", fontsize=10, color="#555555")
    handles = [
        Line2D([], [], marker="o", linestyle="", markersize=14, color=CENTRE_COLOUR, label=summary.scholar.name),
        Line2D([], [], marker="o", linestyle="", markersize=9, color=COAUTHOR_COLOUR, label="co-author"),
        Line2D([], [], color=EDGE_COLOUR, linewidth=_width(1, most), label="1 shared paper"),
    ]
    if most > 1:
        handles.append(Line2D([], [], color=EDGE_COLOUR, linewidth=_width(most, most), label=f"{most} shared papers"))
    if summary.coauthor_links:
        handles.append(Line2D([], [], color=LINK_COLOUR, linewidth=1.2, label="co-authors who wrote together"))
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False, fontsize=9)
    return _save(figure, path)


def render_timeline(summary: ScholarSummaryResult, path: Path) -> Path:
    """The publications-per-year PNG stacked by theme (see the module docstring)."""
    years_seen = [y for t in summary.timeline for y in t.counts_by_year] or list(summary.counts_by_year)
    first, last = min(years_seen), max(years_seen)
    years = list(range(first, last + 1))
    figure = Figure(figsize=(max(7.0, min(16.0, 0.55 * len(years) + 5.0)), 5))
    ax = figure.add_subplot()
    bottom = [0] * len(years)
    series = summary.timeline or []
    colour_index = 0
    for theme in series:
        heights = [theme.counts_by_year.get(y, 0) for y in years]
        if theme.label == "Other topics":
            colour = OTHER_COLOUR
        else:
            colour = PALETTE[colour_index % len(PALETTE)]
            colour_index += 1
        ax.bar(years, heights, bottom=bottom, color=colour, edgecolor="white", linewidth=0.8,
               label=textwrap.fill(theme.label, 32))
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    if not series:
        heights = [summary.counts_by_year.get(y, 0) for y in years]
        ax.bar(years, heights, color=PALETTE[0], edgecolor="white", label="papers")
        bottom = heights
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    step = 1 if len(years) <= 16 else 2 if len(years) <= 32 else 5
    ax.set_xticks([y for y in years if (y - first) % step == 0])
    ax.tick_params(axis="x", labelrotation=45 if len(years) > 10 else 0)
    pad = max(0.6, (6 - len(years)) / 2)  # a lone year is not one huge bar
    ax.set_xlim(first - pad, last + pad)
    ax.set_ylim(0, max(bottom) * 1.15 + 0.5)
    ax.set_xlabel("year")
    ax.set_ylabel("papers in the index")
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e5e8e8", linewidth=0.8)
    ax.set_axisbelow(True)
    figure.suptitle(f"Publications of {summary.scholar.name} by year and theme", fontsize=14, fontweight="bold")
    span = str(first) if first == last else f"{first}–{last}"
    ax.set_title(f"{summary.paper_count} indexed papers, {span}", fontsize=10, color="#555555")
    handles, labels = ax.get_legend_handles_labels()  # listed top-down like the stack reads
    ax.legend(handles[::-1], labels[::-1], title="theme", loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False, fontsize=9)
    return _save(figure, path)


def render_plots(summary: ScholarSummaryResult, out_dir: Path) -> list[Path]:
    """Write ``<name>-coauthors.png`` and ``<name>-timeline.png`` into ``out_dir``.

    A picture with nothing to show (no co-author, no dated paper) is skipped; the paths of
    the pictures written are returned.
    """
    out_dir = Path(out_dir)
    slug = _slug(summary.scholar.name)
    written: list[Path] = []
    if summary.coauthors:
        written.append(render_network(summary, out_dir / f"{slug}-coauthors.png"))
    if summary.counts_by_year or any(t.counts_by_year for t in summary.timeline):
        written.append(render_timeline(summary, out_dir / f"{slug}-timeline.png"))
    return written
