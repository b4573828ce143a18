"""How much English a Chinese-first student reads at run time, measured.

    python -m companion.tools.english_runs notebooks/zh-CN            # every notebook there
    python -m companion.tools.english_runs notebooks/zh-TW/00_*.ipynb --json runs.json

Executes each notebook as a student would (nbclient, the kernel in the notebook's folder,
so a zh-CN or zh-TW folder makes the package speak its language) and counts, in what the
student sees, the runs of three or more English words: printed text, rich outputs
(HTML as a browser shows it: no tags, no scripts), tracebacks, and the widgets' state (labels, option labels,
HTML values, what their Output widgets hold). Code, identifiers, numbers, units and the
names that stay as they are (models, chips, methods) are not words here. The report
lists, per notebook, the runs and how often each was seen, most frequent first.

:func:`english_runs` is the one detector, also used by the tests that hold the package's
messages to Chinese. An authoring tool: the course and the ranks never import it.
"""
from __future__ import annotations

import argparse
import collections
import html
import json
import re
import sys
from pathlib import Path

__all__ = ["english_runs", "visible_texts", "measure"]

# Names that stay as they are in the Chinese editions: models, chips, methods, libraries.
NAMES = ("Llama-3", "Llama 3", "DeepSeek-V3", "Mixtral", "GPT-3", "Megatron-SP", "Megatron",
         "LayerNorm", "GeLU", "PowerSGD", "TernGrad", "DualPipeV", "DualPipe", "FedAvg",
         "ZeRO", "FSDP", "H100", "H200", "A100", "V100", "B200", "RTX", "top-k", "1-bit",
         "gloo", "nccl", "cpu", "torchrun")
_CODE = re.compile(r"`[^`]*`|<[^>]+>|\$[^$]*\$|\{[^}]*\}|'[^']*'|\"[^\"]*\"|"
                   r"\S*[_/.()\[\]=:]\S*[a-z]\S*")
_WORD = r"[A-Za-z][a-z]+(?:-[a-z]+)*"
_RUN = re.compile(rf"{_WORD}(?:[ ,;]+{_WORD}){{2,}}")


def english_runs(text: str) -> list[str]:
    """The runs of 3 or more English words in ``text`` (lower-case words: acronyms such
    as GPU are units), code, identifiers, quoted values and :data:`NAMES` aside."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    for name in NAMES:
        text = text.replace(name, " ")
    runs = []
    for line in text.splitlines():
        runs += [" ".join(m.group().split()) for m in _RUN.finditer(_CODE.sub(" ", line))]
    return runs


def _html_text(markup: str) -> str:
    """What a browser shows of ``markup``: no tags, and nothing of its scripts and styles
    (matplotlib's animations ship a page of JavaScript with English comments)."""
    markup = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", markup, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def _output_texts(output) -> list[str]:
    if output.get("output_type") == "stream":
        return [output.get("text", "")]
    if output.get("output_type") == "error":
        return [re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.get("traceback", [])))]
    data = output.get("data", {})
    if "text/html" in data:
        return [_html_text("".join(data["text/html"]))]
    return ["".join(data.get(kind, "")) for kind in ("text/markdown", "text/plain")
            if kind in data][:1]


def visible_texts(nb) -> list[str]:
    """What a student reads in an executed notebook ``nb``: its code cells' outputs and
    its widgets' state (descriptions, option labels, HTML and label values, the outputs
    their Output widgets hold)."""
    texts = [t for cell in nb.get("cells", []) if cell.get("cell_type") == "code"
             for output in cell.get("outputs", []) for t in _output_texts(output)]
    state = (nb.get("metadata", {}).get("widgets", {})
             .get("application/vnd.jupyter.widget-state+json", {}).get("state", {}))
    for model in state.values():
        s = model.get("state", {})
        texts += [s.get("description", ""), " / ".join(map(str, s.get("_options_labels", [])))]
        if model.get("model_name") in ("HTMLModel", "LabelModel", "HTMLMathModel"):
            texts.append(_html_text(str(s.get("value", ""))))
        texts += [t for output in s.get("outputs", []) for t in _output_texts(output)]
    return [t for t in texts if t]


def measure(path: Path, timeout: int = 300) -> collections.Counter:
    """Execute the notebook at ``path`` in its folder; count the English runs it shows."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path={str(path)!r}: pass a notebook file, e.g. "
                         "notebooks/zh-CN/00_launching_ranks.ipynb")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                   store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return collections.Counter(run for text in visible_texts(nb) for run in english_runs(text))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.tools.english_runs",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path,
                        help="notebooks, or folders of them (e.g. notebooks/zh-CN)")
    parser.add_argument("--json", type=Path, help="also write the runs per notebook here")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = parser.parse_args(argv)
    notebooks = [n for p in args.paths for n in (sorted(p.glob("*.ipynb")) if p.is_dir() else [p])]
    report, total = {}, 0
    for path in notebooks:
        runs = measure(path, args.timeout)
        report[path.name] = runs.most_common()
        total += sum(runs.values())
        print(f"{path.name}: {sum(runs.values())} English runs, {len(runs)} distinct")
        for run, n in runs.most_common(12):
            print(f"    {n:4d}  {run}")
    print(f"total: {total} English runs in {len(notebooks)} notebooks")
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
