"""Which parameters of the package's functions end up in a raised ValueError/TypeError
message: the data flow :mod:`.error_templates` follows to find the texts callers pass in
(every ``fix`` given to :mod:`companion.validation`'s helpers, through helpers that pass
it on). An authoring tool: the course and the ranks never import it.
"""
from __future__ import annotations

import ast

_RAISED = {"ValueError", "TypeError"}


def _raises(scope):
    for node in ast.walk(scope):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                and isinstance(node.exc.func, ast.Name) and node.exc.func.id in _RAISED \
                and node.exc.args:
            yield node.exc.args[0]


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None


def _functions(trees: dict):
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def _carriers(trees: dict) -> dict:
    """function name -> {parameter name: position} of the parameters whose value reaches
    a raised message, directly or through another such function (to a fixed point)."""
    carriers: dict = {}
    changed = True
    while changed:
        changed = False
        for _path, fn in _functions(trees):
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
            read = {name for msg in _raises(fn) for name in _names_shown(msg)}
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                for p in carriers.get(_callee(call), {}):
                    arg = _argument(call, p, carriers[_callee(call)][p])
                    if isinstance(arg, ast.Name):
                        read.add(arg.id)
            mine = {p: params.index(p) - (1 if params[:1] == ["self"] else 0)
                    for p in params if p in read}
            if mine and carriers.get(fn.name, {}).keys() != (carriers.get(fn.name, {}) | mine).keys():
                carriers[fn.name] = {**carriers.get(fn.name, {}), **mine}
                changed = True
    return carriers


def _names_shown(node) -> set[str]:
    """Names whose value can appear in a message: all those ``node`` reads, except inside
    ``type(x)`` (``f"got {type(message).__name__}"`` shows a type, not the argument)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    return {name for child in ast.iter_child_nodes(node) for name in _names_shown(child)}


def _argument(call: ast.Call, name: str, position: int):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[position] if 0 <= position < len(call.args) \
        and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]) else None
