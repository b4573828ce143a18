"""The student release: every notebook with its solutions removed (``make student``).

Solutions are marked with nbgrader's convention, so a course already on nbgrader can
use the notebooks as they are (``nbgrader generate_assignment`` reads the same marks):

* the cell's metadata has ``"nbgrader": {"solution": true, "grade_id": "01-ring", ...}``;
* inside it, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` are the
  solution. They become ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` at the
  same indentation, exactly what nbgrader's ``ClearSolutions`` writes; a solution cell
  without the marks is replaced whole. Markdown solutions become "YOUR ANSWER HERE".

In the course's own notebooks these cells are also collapsed
(``metadata.jupyter.source_hidden``), so a student reading them does not see the answer
by accident; the release expands them again, since that is where the student types.
Outputs are cleared. Usage::

    python -m companion.tools.release notebooks dist/student
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

__all__ = ["BEGIN", "END", "is_solution_cell", "clear_solution", "student_notebook",
           "release", "main"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
MARKDOWN_STUB = "YOUR ANSWER HERE"
GRADE_ID = re.compile(r"^[A-Za-z0-9_\-]+$")


def is_solution_cell(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False))


def clear_solution(source: str, cell_type: str = "code") -> str:
    """``source`` with every marked region replaced by the stub (nbgrader's rule)."""
    lines, out, inside = source.splitlines(), [], False
    if not any(line.strip() == BEGIN for line in lines):
        if any(line.strip() == END for line in lines):
            raise ValueError(f"'{END}' without '{BEGIN}' in:\n{source}")
        return "\n".join(CODE_STUB) if cell_type == "code" else MARKDOWN_STUB
    for line in lines:
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"nested '{BEGIN}' in:\n{source}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + s for s in CODE_STUB] if cell_type == "code" else [MARKDOWN_STUB]
        elif stripped == END:
            if not inside:
                raise ValueError(f"'{END}' without '{BEGIN}' in:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"'{BEGIN}' without '{END}' in:\n{source}")
    return "\n".join(out)


def student_notebook(nb):
    """A copy of ``nb`` for students: solutions cleared and expanded, outputs removed."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if is_solution_cell(cell):
            grade_id = cell.metadata["nbgrader"].get("grade_id", "")
            if not GRADE_ID.match(grade_id):
                raise ValueError(f"solution cell with grade_id={grade_id!r}: nbgrader needs "
                                 "letters, digits, '-' or '_'")
            cell.source = clear_solution(cell.source, cell.cell_type)
            cell.metadata.get("jupyter", {}).pop("source_hidden", None)
    return nb


def release(source_dir: Path, target_dir: Path) -> list[Path]:
    """Write the student version of every notebook in ``source_dir`` to ``target_dir``."""
    source_dir, target_dir = Path(source_dir), Path(target_dir)
    notebooks = sorted(source_dir.glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise ValueError(f"source_dir={str(source_dir)!r} holds no numbered notebooks; "
                         "pass the course's notebooks/ folder")
    target_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks + sorted(p for p in source_dir.glob("*.ipynb") if p not in notebooks):
        nb = student_notebook(nbformat.read(path, as_version=4))
        out = target_dir / path.name
        nbformat.write(nb, out)
        written.append(out)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", nargs="?", default="notebooks")
    parser.add_argument("target", nargs="?", default="dist/student")
    args = parser.parse_args(argv)
    written = release(Path(args.source), Path(args.target))
    cleared = sum(is_solution_cell(c) for p in written for c in nbformat.read(p, 4).cells)
    print(f"wrote {len(written)} notebooks to {args.target}/ ({cleared} solution cells "
          "cleared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
