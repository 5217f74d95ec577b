"""A notebook's cells and a source's top-level definitions, as the step fingerprints and the export check
(``tests/notebook_exports.py``) both read them."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any


def notebook_cells(notebook: Path) -> list[dict[str, Any]]:
    return json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]


def cell_source(cell: dict[str, Any]) -> str:
    """A cell's source as one string (nbformat stores it as a string or as a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def definitions(source: str) -> dict[str, str]:
    """Top-level definitions in ``source``, by name, as their exact text (decorators included)."""
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        match node:
            case (ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name)
                  | ast.Assign(targets=[ast.Name(id=name)]) | ast.AnnAssign(target=ast.Name(id=name))):
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                found[name] = "\n".join(lines[first - 1:node.end_lineno]).rstrip()
    return found
