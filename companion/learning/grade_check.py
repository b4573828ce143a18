"""Check one submission's functions in a fresh process that runs only the package's code:
the second half of grading one (student, notebook).

Part of the instructor's grader (:mod:`companion.learning.grade`, the README's "Grading";
the exercises are taught from notebook 00 on). :func:`check_functions` starts
``python -m companion.learning.grade_check`` in a new temporary folder and session and
sends it, on stdin, the exercises and the functions' bytes. That process calls
``exercise(id).check(Submitted(...), quiet=True)`` for each exercise: the bytes are
opened only in the exercise's ranks (:mod:`.grade_submitted`). It answers one JSON line
per exercise on a copy of its stdout; its own stdout, which the ranks' output is
forwarded to, goes to stderr, so nothing a student's code prints can pose as a verdict.
"""
from __future__ import annotations

import base64
import json
import linecache
import os
import shutil
import subprocess
import sys

from ..i18n import _, set_language
from .grade_run import clean_env, kill_group, scratch

__all__: list[str] = []

STARTUP_SECONDS = 120   # the grading process's own start and the ranks' first fork


def check_functions(exercises, ran, language: str) -> dict[str, tuple[str, str]]:
    """``{exercise id: (verdict kind, message)}`` for ``ran``'s functions
    (a :class:`~.grade_run.Ran`), each checked by its exercise in a fresh process."""
    request = {"language": language, "sources": ran.sources, "exercises": [
        {"id": ex.id, "name": ex.student_name,
         "blob": base64.b64encode(ran.blobs[ex.student_name]).decode("ascii")
         if ex.student_name in ran.blobs else None,
         "problem": ran.problems.get(ex.student_name)} for ex in exercises]}
    limit = STARTUP_SECONDS + sum(2 * ex.timeout + 30 for ex in exercises)
    home = scratch("check")
    process = subprocess.Popen(
        [sys.executable, "-m", "companion.learning.grade_check"], cwd=home,
        env=clean_env(home, language), start_new_session=True, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stopped = None
    try:
        try:
            out, err = process.communicate(json.dumps(request).encode(), timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            out, err = process.communicate()
            stopped = _("the grader stopped checking this notebook after {seconds} s."
                        ).format(seconds=f"{limit:g}")
    finally:
        kill_group(process.pid)
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(home, ignore_errors=True)
    verdicts = {}
    for line in out.decode("utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
            verdicts[str(item["id"])] = (str(item["kind"]), str(item["message"]))
        except (ValueError, KeyError, TypeError):
            continue
    tail = err.decode("utf-8", errors="replace").strip().splitlines()[-3:]
    why = stopped or _("the grading process stopped (exit code {code}) before checking "
                       "it; its last output: {tail}").format(code=process.returncode,
                                                             tail=" | ".join(tail) or "-")
    for ex in exercises:
        verdicts.setdefault(ex.id, ("grader_error", why))
    return verdicts


def _verdict(item: dict):
    from .exercise import exercise
    from .grade_submitted import Submitted
    from .verdict import Verdict

    ex = exercise(item["id"])
    if item["blob"] is None:
        if item["problem"]:
            return Verdict("not_taken", _(
                "the grader could not take {name} out of your notebook's kernel: "
                "{problem}.").format(name=item["name"], problem=item["problem"]))
        return Verdict("not_implemented", _(
            "not implemented: after your notebook ran from top to bottom there was no "
            "{name} (define it in the exercise's cell, under that name).").format(
                name=item["name"]))
    return ex.check(Submitted(item["name"], base64.b64decode(item["blob"])), quiet=True)


def main() -> int:
    """The grading process: a request on stdin, one JSON verdict per line on stdout."""
    from .verdict import Verdict

    request = json.loads(sys.stdin.buffer.read())
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)   # the launcher forwards the ranks' output here: away from the verdicts
    set_language(request["language"])
    for label, text in request["sources"].items():
        # The cells' code, so a rank's traceback quotes the student's line (the launcher
        # ships linecache entries without a file to the ranks).
        linecache.cache[label] = (len(text), None, text.splitlines(True), label)
    for item in request["exercises"]:
        try:
            verdict = _verdict(item)
        except Exception as exc:   # the checker itself failed: say so, then check the others
            verdict = Verdict("grader_error", _("the grader could not check it: {error}"
                                                ).format(error=f"{type(exc).__name__}: {exc}"))
        answers.write(json.dumps({"id": item["id"], "kind": verdict.kind,
                                  "message": verdict.message}, ensure_ascii=False) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
