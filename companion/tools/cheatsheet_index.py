"""Rewrite the cheat-sheet's index cell from its section headings.

    python -m companion.tools.cheatsheet_index           # write the index, English and zh-CN
    python -m companion.tools.cheatsheet_index --check   # change nothing; exit 1 if stale

Run it after changing a section's ``## N · title`` or its ``*Derived in ...*`` line in
``notebooks/cheatsheet.ipynb`` (and their translations), then ``python -m
companion.tools.i18n_build``, which makes the Chinese editions (zh-TW from zh-CN). The
index is :func:`companion.cheatsheet.index_markdown` of the English headings; its zh-CN
translation, in ``translations/zh-CN/cheatsheet.json``, is the same function of the zh-CN
headings, with the ``en_sha`` of the English index.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cheatsheet.index import INDEX_ID, index_markdown
from . import drift

ROOT = Path(__file__).resolve().parents[2]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def plan(root: Path = ROOT) -> dict[Path, str]:
    """The two files' new text, for those whose index is stale (empty when up to date)."""
    nb_path = root / "notebooks" / "cheatsheet.ipynb"
    tr_path = root / "translations" / "zh-CN" / "cheatsheet.json"
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    translation = json.loads(tr_path.read_text(encoding="utf-8"))
    cell = next((c for c in nb["cells"] if c.get("id") == INDEX_ID), None)
    if cell is None:
        raise ValueError(f"{nb_path}: no cell with id {INDEX_ID!r}; add a markdown cell with "
                         "that id where the index belongs.")
    english = index_markdown(nb["cells"])
    zh_cells = {c["id"]: c["zh"] for c in translation["cells"]}
    ids = [c["id"] for c in nb["cells"] if c["cell_type"] == "markdown" and c["id"] in zh_cells]
    chinese = index_markdown([zh_cells[i] for i in ids if i != INDEX_ID], "zh-CN")
    out = {}
    if "".join(cell["source"]) != english:
        cell["source"] = _lines(english)
        out[nb_path] = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    entry = next((c for c in translation["cells"] if c["id"] == INDEX_ID), None)
    if entry is None:   # a new index cell: its translation goes where the cell is
        before = [c["id"] for c in nb["cells"][:nb["cells"].index(cell)]
                  if c["cell_type"] == "markdown"]
        entry = {"id": INDEX_ID}
        translation["cells"].insert(sum(c["id"] in before for c in translation["cells"]), entry)
    want = {"id": INDEX_ID, "en_sha": drift.sha(english), "zh": chinese}
    if entry != want:
        entry.clear()
        entry.update(want)
        out[tr_path] = json.dumps(translation, indent=1, ensure_ascii=False) + "\n"
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.tools.cheatsheet_index",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = plan()
    for path, text in stale.items():
        if args.check:
            print(f"stale index: {path.relative_to(ROOT)}")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
