"""``replay --plot``: tokens per model call, with the compaction points marked.

matplotlib is an optional extra (``pip install 'compaction-ladder[plot]'``), imported here
only, with the Agg backend so no display is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import CliError
from .inputs import write_atomic

__all__ = ["plot_replay"]


def plot_replay(report: dict[str, Any], out: Path) -> None:
    """Draw ``report`` (the replay of one file) as a PNG at ``out``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install 'compaction-ladder[plot]'") from None
    import io

    calls = report["calls"]
    xs = [c["call"] for c in calls]
    ys = [c["tokens_sent"] for c in calls]
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    try:
        ax.plot(xs, ys, color="#1f77b4", linewidth=1.6, label="tokens sent")
        marks = [c for c in calls if c["compacted"]]
        if marks:
            ax.scatter(
                [c["call"] for c in marks],
                [c["tokens_sent"] for c in marks],
                color="#d62728",
                zorder=3,
                label="compaction",
            )
        ax.axhline(report["window"], color="black", linewidth=1, label="window")
        ax.axhline(
            report["compact_at"], color="#ff7f0e", linestyle="--", linewidth=1, label="compact at"
        )
        ax.axhline(
            report["compact_to"], color="#2ca02c", linestyle=":", linewidth=1, label="compact to"
        )
        ax.set_xlabel("model call")
        ax.set_ylabel(f"tokens ({report['counter']})")
        ax.set_title(f"{Path(report['file']).name}: tokens per model call")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize="small")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    write_atomic(out, buffer.getvalue())
