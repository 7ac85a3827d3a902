"""Peak memory of one counting pass or one cold ladder run, in a process of its own.

``tracemalloc`` traces every allocation, and counting allocates a list of token ids per text
(millions of ints at 100k messages): traced, the 100k run takes minutes. So memory is measured
as the growth of the peak resident set size of a fresh interpreter across the run, after the
conversation was built and the encoding loaded (the peak is reset first on Linux, so building
the conversation does not hide it; memory the process freed before is reused, so this is a
lower bound). It is a separate pass from the
timed runs, so neither spoils the other.

Run by :func:`benchmarks.scaling.suite.scaling` as
``python -m benchmarks.scaling.memory N floor|ladder TOKENS``;
prints one JSON object.
"""

from __future__ import annotations

import contextlib
import gc
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _rss_bytes() -> int:
    """Peak resident set size so far (since the last :func:`_reset_peak`, where supported)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak if sys.platform == "darwin" else peak * 1024


def _reset_peak() -> None:
    # Linux >= 4.0: writing 5 to clear_refs resets the peak (VmHWM) to the current RSS, so
    # building the conversation (a larger transient peak) does not hide the run's own.
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def measure_here(n: int, what: str, tokens: int) -> dict[str, int]:
    """``tokens`` is the conversation's size (known to the caller): counting it here would
    raise the peak before the measurement starts."""
    from compaction.tokens import TiktokenCounter

    from ..common.ladders import LADDER_SHARE, free_ladder
    from ..common.synthetic import conversation

    messages = conversation(n)
    TiktokenCounter().count_text("load the encoding before the baseline")
    gc.collect()
    _reset_peak()
    base = _rss_bytes()
    if what == "floor":
        TiktokenCounter().count_messages(messages)
    elif what == "ladder":
        counter = TiktokenCounter()
        free_ladder(counter).compact(messages, target=int(tokens * LADDER_SHARE), counter=counter)
    else:
        raise ValueError(f"what must be 'floor' or 'ladder', got {what!r}")
    return {"base_rss": base, "peak_rss": _rss_bytes(), "growth": _rss_bytes() - base}


def measure(n: int, what: str, tokens: int) -> dict[str, int]:
    """Run :func:`measure_here` in a fresh interpreter (so earlier runs leave no peak)."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scaling.memory", str(n), what, str(tokens)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory pass for {n} messages ({what}) failed:\n{done.stderr}")
    return json.loads(done.stdout)


if __name__ == "__main__":
    print(json.dumps(measure_here(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))))
