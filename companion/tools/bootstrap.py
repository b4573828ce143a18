"""The install cell that lets every notebook start on Colab or Binder, and its links.

Each notebook's first cell installs this package when ``companion`` is not importable
(Colab, a bare Jupyter), with ``%pip`` from the course repository, and leaves the torch
already installed alone. In a clone set up with ``make lab``, or on Binder (whose
``environment.yml`` installs the package), the cell finds ``companion`` and does nothing,
so nbval, Voila and ``make student`` run it like any other cell. docs/colab-and-binder.md's "Colab
and Binder" section explains it; ``tests/test_colab_install.py`` runs notebooks 00 and 02
through it in a fresh virtual environment. Usage::

    python -m companion.tools.bootstrap notebooks/          # insert or update the cell
    python -m companion.tools.bootstrap --check notebooks/  # exit 1 if a notebook lacks it
    python -m companion.tools.bootstrap --links notebooks/  # the README's table of links

``COMPANION_INSTALL_SOURCE`` in the kernel's environment overrides where the cell
installs from (a local checkout, a wheel, another branch); the tests use it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

__all__ = ["COURSE_REPO", "BRANCH", "COURSE_REPO_URL", "INSTALL_SOURCE", "CELL_ID", "TAG",
           "bootstrap_source", "bootstrap_cell", "find_bootstrap", "apply", "notebook_paths",
           "apply_to_paths", "colab_url", "binder_url", "links_table", "main"]

# PLACEHOLDER until the course has a public home: this repository has no remote. Set
# the GitHub "owner/name" here once, then rerun `python -m companion.tools.bootstrap notebooks/`
# and `--links` (the README's table). GitHub names cannot contain "_", so this
# placeholder can never resolve to a stranger's repository.
COURSE_REPO = "SET_ME_OWNER/companion"
BRANCH = "main"
COURSE_REPO_URL = f"https://github.com/{COURSE_REPO}"
INSTALL_SOURCE = f"git+{COURSE_REPO_URL}.git@{BRANCH}"

CELL_ID = "companion-bootstrap"   # the same in every notebook: ids are per notebook
TAG = "companion-bootstrap"       # how the tool finds its own cell again

_TEMPLATE = '''\
# Colab, Binder or a bare Jupyter: install the course package `companion` if this kernel
# lacks it, keeping the torch already installed. After `make lab` this cell does nothing.
import importlib, importlib.util, os
if importlib.util.find_spec("companion") is None:
    _source = os.environ.get("COMPANION_INSTALL_SOURCE", "{source}")
    try:
        import torch
        _keep = f'"torch=={{torch.__version__}}"'  # already satisfied, so pip leaves torch be
    except ImportError:
        _keep = ""
    print(f"installing companion from {{_source}} ...")
    %pip install --quiet "{{_source}}" {{_keep}}
    importlib.invalidate_caches()
    if importlib.util.find_spec("companion") is None:
        raise RuntimeError(f"could not install companion from {{_source}}: see pip's messages above")'''


def bootstrap_source(source: str = INSTALL_SOURCE) -> str:
    """The cell's code, installing from ``source`` (a pip requirement: a ``git+https``
    URL, a path to a checkout, or a wheel) unless ``COMPANION_INSTALL_SOURCE`` is set."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str (a pip install target), got {type(source).__name__}.")
    if not source.strip() or any(c in source for c in '"\n\r{}'):
        raise ValueError(f"source must be a pip install target such as {INSTALL_SOURCE!r}, "
                         f"without quotes, braces or newlines; got {source!r}.")
    return _TEMPLATE.format(source=source)


def bootstrap_cell(source: str = INSTALL_SOURCE):
    """The bootstrap code cell: fixed id, outputs cleared, tagged for this tool and for
    nbval (its output depends on the machine), skipped by slideshows."""
    import nbformat  # a course dependency (requirements.txt), not the package's: imported late

    cell = nbformat.v4.new_code_cell(bootstrap_source(source))
    cell.id = CELL_ID
    cell.metadata = {"tags": [TAG, "nbval-ignore-output"], "slideshow": {"slide_type": "skip"}}
    return cell


def _require_notebook(nb) -> None:
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise TypeError(f"nb must be a notebook (nbformat.read's result), got {type(nb).__name__}.")


def find_bootstrap(nb) -> list[int]:
    """Indices of the cells this tool inserted (by tag, or by id for a cell whose tags
    someone removed)."""
    _require_notebook(nb)
    return [i for i, c in enumerate(nb["cells"])
            if TAG in c.get("metadata", {}).get("tags", []) or c.get("id") == CELL_ID]


def apply(nb, source: str = INSTALL_SOURCE) -> bool:
    """Make the bootstrap cell ``nb``'s first cell, in place; True if ``nb`` changed.

    Idempotent: a notebook that already starts with the current cell is left as it is,
    an old version is replaced where it stands (moved to the front if it is not there),
    and no other cell is touched, so every other id stays.
    """
    _require_notebook(nb)
    wanted = bootstrap_cell(source)
    found = find_bootstrap(nb)
    if found == [0] and _same(nb["cells"][0], wanted):
        return False
    for i in reversed(found):
        del nb["cells"][i]
    if any(c.get("id") == CELL_ID for c in nb["cells"]):  # cannot happen after the deletion
        raise AssertionError("duplicate cell id")
    nb["cells"].insert(0, wanted)
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
        nb["nbformat"], nb["nbformat_minor"] = 4, 5  # cell ids exist from 4.5 on
    return True


def _same(cell, wanted) -> bool:
    return (cell.get("cell_type") == "code" and cell.get("id") == CELL_ID
            and "".join(cell.get("source", "")) == wanted.source
            and cell.get("metadata") == wanted.metadata
            and cell.get("outputs") == [] and cell.get("execution_count") is None)


def notebook_paths(paths) -> list[Path]:
    """The notebooks named by ``paths``: ``.ipynb`` files, and those directly inside folders."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out = []
    for p in map(Path, paths):
        if not p.exists():
            raise ValueError(f"paths: {str(p)!r} does not exist; pass notebooks or the notebooks/ folder.")
        if p.is_dir():
            found = sorted(p.glob("*.ipynb"))
            if not found:
                raise ValueError(f"paths: folder {str(p)!r} holds no .ipynb; pass the course's notebooks/ folder.")
            out += found
        elif p.suffix == ".ipynb" and p.is_file():
            out.append(p)
        else:
            raise ValueError(f"paths: {str(p)!r} is neither a notebook (.ipynb) nor a folder of notebooks.")
    return out


def apply_to_paths(paths, source: str = INSTALL_SOURCE, check: bool = False) -> list[Path]:
    """Apply :func:`apply` to every notebook in ``paths`` and write those that changed
    (formatted as nbformat writes them, one trailing newline). Returns the notebooks
    that changed, or with ``check=True`` those that would, writing nothing."""
    import nbformat

    bootstrap_source(source)  # refuse a bad source before reading anything
    changed = []
    for path in notebook_paths(paths):
        nb = nbformat.read(path, as_version=4)
        if apply(nb, source):
            changed.append(path)
            if not check:
                path.write_text(nbformat.writes(nb).rstrip("\n") + "\n", encoding="utf-8")
    return changed


def _repo_path(path) -> str:
    p = Path(path)
    if p.suffix != ".ipynb":
        raise ValueError(f"path must name a notebook (.ipynb), got {str(path)!r}.")
    if p.is_absolute():
        raise ValueError(f"path must be relative to the repository root, e.g. "
                         f"'notebooks/{p.name}', got {str(path)!r}.")
    return p.as_posix()


def colab_url(path) -> str:
    """Colab's address for the notebook at ``path`` (relative to the repository root)."""
    return f"https://colab.research.google.com/github/{COURSE_REPO}/blob/{BRANCH}/{_repo_path(path)}"


def binder_url(path) -> str:
    """Binder's address that opens JupyterLab on the notebook at ``path``."""
    return (f"https://mybinder.org/v2/gh/{COURSE_REPO}/{BRANCH}"
            f"?labpath={quote(_repo_path(path), safe='')}")


_COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
_BINDER_BADGE = "https://mybinder.org/badge_logo.svg"


def links_table(paths, root=".") -> str:
    """docs/colab-and-binder.md's Markdown table: one row per notebook with its Colab and Binder links."""
    root = Path(root)
    rows = ["| notebook | Colab | Binder |", "|---|---|---|"]
    for nb in notebook_paths(paths):
        try:
            rel = nb.resolve().relative_to(root.resolve())
        except ValueError:
            raise ValueError(f"root: {str(nb)!r} is not inside root={str(root)!r}; pass the "
                             "repository root.") from None
        rows.append(f"| `{rel.name}` | [![Open in Colab]({_COLAB_BADGE})]({colab_url(rel)}) "
                    f"| [![Launch on Binder]({_BINDER_BADGE})]({binder_url(rel)}) |")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="notebooks, or folders of notebooks")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a notebook lacks the current cell")
    parser.add_argument("--links", action="store_true",
                        help="print the table of Colab and Binder links in docs/colab-and-binder.md")
    parser.add_argument("--source", default=INSTALL_SOURCE,
                        help=f"what the cell installs (default {INSTALL_SOURCE})")
    args = parser.parse_args(argv)
    try:
        if args.links:
            print(links_table(args.paths))
            return 0
        changed = apply_to_paths(args.paths, args.source, check=args.check)
    except (ValueError, TypeError) as e:
        parser.error(str(e))
    if "SET_ME" in args.source:
        print(f"note: the cell installs from the placeholder {args.source}; set COURSE_REPO "
              "in companion/tools/bootstrap.py once the course has a public repository.",
              file=sys.stderr)
    verb = "lack the current bootstrap cell" if args.check else "updated"
    for path in changed:
        print(f"{verb}: {path}")
    if not changed:
        print("every notebook starts with the current bootstrap cell")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
