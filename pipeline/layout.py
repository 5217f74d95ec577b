"""Where things live: the repository's folders, and (below) every folder and file a run writes."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
