"""Shared fixtures: where the real transcripts live, and skipping cleanly without them."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT.parent / "shared" / "data" / "transcripts"


def transcript_files() -> list[Path]:
    """Every real transcript file present (empty when the folder is absent)."""
    if not TRANSCRIPTS.is_dir():
        return []
    patterns = ("**/*.jsonl", "**/*.traj.json", "**/*.traj")
    found = {p for pattern in patterns for p in TRANSCRIPTS.glob(pattern)}
    return sorted(found)


@pytest.fixture
def transcripts_dir() -> Path:
    if not TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not present at {TRANSCRIPTS}")
    return TRANSCRIPTS
