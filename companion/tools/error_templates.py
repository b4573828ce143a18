"""The ValueError/TypeError messages the package raises, read from its source as templates.

    python -m companion.tools.error_templates            # list what needs a translation
    python -m companion.tools.error_templates --update   # add new templates, drop stale ones
    python -m companion.tools.error_templates --check    # exit 1 if the catalogue is behind

A template is the message's text as the source writes it: an f-string's literal text
with its fields as written (``{name} must be {kind}, got {value!r}{_tail(fix)}``). The
walk finds, in every module of ``companion/``:

* the message of each ``raise ValueError(...)`` / ``raise TypeError(...)``: a string,
  an f-string, a ``+`` of them, ``"...".format(...)``, or a local name assigned one;
* the strings inside such a message's fields (``{'' if inf else ' (finite)'}``) and the
  strings a field's local name is assigned (``kind = f"an integer >= {minimum}"``);
* what callers pass to a parameter that ends up in a message (every ``fix`` given to
  :mod:`companion.validation`'s helpers, followed through helpers that pass it on).

Only templates with English words in their fixed text need a translation. The
catalogue ``companion/i18n/data/errors.zh-CN.json`` maps each, grouped by the module
that raises it, to its Simplified Chinese; ``--update`` writes the English keys (so no
template is typed twice) and the zh-TW file converted from it
(:mod:`companion.tools.zh_tw`). :mod:`companion.i18n.errors` reads both. An authoring
tool: the course and the ranks never import it.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

from ..i18n.errors import fields, parts
from .error_flow import _argument, _callee, _carriers, _functions, _raises

__all__ = ["templates", "needs_translation", "catalogue_problems"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "companion"
CATALOGUE = PACKAGE / "i18n" / "data" / "errors.zh-CN.json"
TRADITIONAL = PACKAGE / "i18n" / "data" / "errors.zh-TW.json"


def _template(node, names: dict, seen=()) -> list[str]:
    """The templates an expression can produce (several when a name has several values)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value.replace("{", "{{").replace("}", "}}")]
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                text += part.value.replace("{", "{{").replace("}", "}}")
            else:
                text += _field(part)
        return [text]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in _template(node.left, names, seen)
                for b in _template(node.right, names, seen)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "format" and isinstance(node.func.value, ast.Constant):
        return _template(node.func.value, names, seen)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" \
            and node.args:
        return _template(node.args[0], names, seen)
    if isinstance(node, ast.Name) and node.id in names and node.id not in seen:
        return [t for value in names[node.id] for t in _template(value, names, (*seen, node.id))]
    return ["{" + ast.unparse(node) + "}"]


def _field(part: ast.FormattedValue) -> str:
    text = ast.unparse(part.value)
    if part.conversion != -1:
        text += "!" + chr(part.conversion)
    if part.format_spec is not None:
        text += ":" + "".join(v.value if isinstance(v, ast.Constant) else _field(v)
                              for v in part.format_spec.values)
    return "{" + text + "}"


def _strings_inside(node, names: dict, seen=()) -> list[str]:
    """The string templates nested in a message's fields, and those of the local names
    the fields read."""
    found = []
    for part in node.values if isinstance(node, ast.JoinedStr) else []:
        if isinstance(part, ast.FormattedValue):
            for sub in _outermost_strings(part.value, names):
                found += _template(sub, names, seen) + _strings_inside(sub, names, seen)
    if isinstance(node, ast.BinOp):
        found += _strings_inside(node.left, names, seen) + _strings_inside(node.right, names, seen)
    if isinstance(node, ast.Name) and node.id not in seen:
        for value in names.get(node.id, []):
            found += _strings_inside(value, names, (*seen, node.id))
    return found


def _outermost_strings(node, names: dict):
    """The string nodes in an expression, not those inside another string node."""
    if isinstance(node, (ast.JoinedStr, ast.Constant)) or isinstance(node, ast.Name) \
            and any(isinstance(v, (ast.JoinedStr, ast.Constant)) or isinstance(v, ast.BinOp)
                    and isinstance(v.op, ast.Add) for v in names.get(node.id, ())):
        yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from _outermost_strings(child, names)


def _assignments(scope) -> dict:
    """name -> the expressions a function (or module) assigns it, IfExp branches apart."""
    names: dict = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = node.value
            values = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
            names.setdefault(node.targets[0].id, []).extend(values)
    return names


def templates(package: Path = PACKAGE, tools: bool = True) -> dict[str, set[str]]:
    """module path (relative to the repository) -> the message templates it raises."""
    trees = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        if tools or not rel.startswith("companion/tools/"):
            trees[rel] = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    scopes = [(p, t) for p, t in trees.items()] + list(_functions(trees))
    module_names = {p: _assignments(t) for p, t in trees.items()}
    for path, scope in scopes:
        names = {**module_names[path], **_assignments(scope)} \
            if not isinstance(scope, ast.Module) else module_names[path]
        for msg in _raises(scope):
            found.setdefault(path, set()).update(_template(msg, names) + _strings_inside(msg, names))
    carriers = _carriers(trees)
    for path, fn in list(_functions(trees)) + [(p, t) for p, t in trees.items()]:
        names = {**module_names[path], **(_assignments(fn) if not isinstance(fn, ast.Module) else {})}
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            for p, position in carriers.get(_callee(call), {}).items():
                arg = _argument(call, p, position)
                if arg is not None and not isinstance(arg, ast.Name) or \
                        isinstance(arg, ast.Name) and arg.id in names:
                    texts = _template(arg, names) + _strings_inside(arg, names)
                    found.setdefault(path, set()).update(texts)
                if isinstance(arg, ast.BoolOp):   # fix or f"use a multiple of {parts}"
                    for value in arg.values:
                        found[path].update(_template(value, names))
    return {p: {t for t in ts if needs_translation(t)} for p, ts in found.items()
            if any(needs_translation(t) for t in ts)}


def needs_translation(template: str) -> bool:
    """Whether a template's fixed text holds an English word (code and fields aside)."""
    from .english_runs import _CODE, NAMES
    text = "X".join(parts(template)[::2])
    if not re.search(r"\w[^\s\w]*\s+[^\s\w]*\w|\([a-z]{2,}\)", text):
        return False   # a name, a path, a value: stays as it is
    text = text.replace("(", " ").replace(")", " ")
    for name in NAMES:
        text = text.replace(name, " ")
    return re.search(r"(?<![A-Za-z])[A-Za-z]?[a-z]{2,}", _CODE.sub(" ", text)) is not None


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def catalogue_problems(catalogue: dict | None = None, found: dict | None = None) -> list[str]:
    """What the zh-CN catalogue lacks (a template without a translation, or a translation
    whose fields differ from the template's) and holds too many (a template no module
    raises any more)."""
    catalogue = _read(CATALOGUE) if catalogue is None else catalogue
    found = templates() if found is None else found
    problems = []
    for module, wanted in sorted(found.items()):
        have = catalogue.get(module, {})
        for key in sorted(wanted):
            zh = have.get(key)
            if not zh:
                problems.append(f"{module}: no zh-CN for {key!r}")
            elif not set(fields(zh)) <= set(fields(key)):   # Chinese may drop an 'is'/'are'
                problems.append(f"{module}: fields differ in {key!r} -> {zh!r}")
        problems += [f"{module}: stale {key!r}" for key in sorted(set(have) - wanted)]
    problems += [f"{module}: no module raises these any more" for module in
                 sorted(set(catalogue) - set(found)) if not module.startswith(("_", "<"))]
    return problems


def updated(catalogue: dict, found: dict) -> dict:
    """The catalogue with every found template (new ones untranslated: "") and no stale one."""
    out = {"_about": catalogue.get("_about", "module -> {English template: zh-CN template}; "
                                   "keys written by python -m companion.tools.error_templates "
                                   "--update, values by translators")}
    for module in sorted(found):
        have = catalogue.get(module, {})
        out[module] = {key: have.get(key, "") for key in sorted(found[module])}
    # Python's own messages that the package's put inside theirs (validation.accepts
    # quotes inspect's binding error), typed by hand: no source here raises them.
    out.update({m: t for m, t in catalogue.items() if m.startswith("<")})
    return out


def traditional(catalogue: dict, convert=None) -> str:
    """The zh-TW catalogue (JSON text): each zh-CN template converted to Taiwan usage."""
    if convert is None:
        from .zh_tw import converter
        convert = converter()
    tables = {"_generated": "by python -m companion.tools.error_templates --update from "
                            "errors.zh-CN.json (companion.tools.zh_tw): do not edit"}
    for module, entries in catalogue.items():
        if not module.startswith("_"):
            tables[module] = {k: convert(v) for k, v in entries.items() if v}
    return json.dumps(tables, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _dump(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.tools.error_templates",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true",
                        help="write the new templates' keys and the zh-TW file")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a template lacks a translation or a file is stale")
    args = parser.parse_args(argv)
    found, catalogue = templates(), _read(CATALOGUE)
    if args.update:
        catalogue = updated(catalogue, found)
        CATALOGUE.write_text(_dump(catalogue), encoding="utf-8")
        TRADITIONAL.write_text(traditional(catalogue), encoding="utf-8")
    problems = catalogue_problems(catalogue, found)
    if args.check and TRADITIONAL.read_text(encoding="utf-8") != traditional(catalogue):
        problems.append(f"{TRADITIONAL.name} is stale: run with --update")
    for line in problems:
        print(line)
    total = sum(map(len, found.values()))
    print(f"{total} templates in {len(found)} modules; {len(problems)} problems",
          file=sys.stderr)
    return 1 if args.check and problems else 0


if __name__ == "__main__":
    sys.exit(main())
