"""Command line: run a registered experiment on real ranks, locally or under torchrun.

    python -m companion list
    python -m companion run whoami --world-size 4
    python -m companion run all_reduce --world-size 2 --set key=value
    python -m companion grade submissions/ --out grades.csv    (instructors: README "Grading")
    python -m companion fit "Llama-3 70B" --gpus 64 --tp 8 --seq 8192 --gpu H100
    torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d \\
             --rdzv-endpoint HOST:PORT -m companion run whoami

Under torchrun every process runs the experiment once; rank 0 gathers the results and
prints the summary. Taught in notebook 00; ``fit`` in notebook 09.
"""
from __future__ import annotations

import argparse
import ast
import os
import pickle
import sys

import torch
import torch.distributed as dist

from . import experiments, runtime
from .backends import validate_launch
from .i18n import gettext as _
from .i18n.errors import translate_message
from .launcher import choose_backend, launch
from .validation import accepts, positive_int, positive_number, run_preflight


def _option(check):
    # argparse turns ArgumentTypeError into "argument --world-size: ..." and exit code 2,
    # the same as any other bad option, instead of a traceback from inside launch().
    def parse(text):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # "nan", "four": the check says what is wrong with it
        try:
            return check(value)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


class _Usage(argparse.HelpFormatter):
    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, _("usage: ") if prefix is None else prefix)


class _RawUsage(_Usage, argparse.RawDescriptionHelpFormatter):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse in the student's language ($COMPANION_LANG or set_language). Its refusals
    ("invalid choice: ...") are found again in the errors catalogue, whose "<argparse>"
    section holds argparse's own templates, the way a ValueError of the package is; the
    error frame, the help's headings and "usage:" go through the message table. argparse's
    gettext domain is left alone: patching it would change every parser in the process.
    In English every line is argparse's own. The subcommands' parsers are of this class
    too (argparse makes them of the parent's type)."""

    def __init__(self, *args, add_help=True, **kwargs):
        kwargs.setdefault("formatter_class", _Usage)
        super().__init__(*args, add_help=False, **kwargs)
        self._positionals.title = _("positional arguments")
        self._optionals.title = _("options")
        if add_help:
            self.add_argument("-h", "--help", action="help",
                              help=_("show this help message and exit"))

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, _("{prog}: error: {message}").format(
            prog=self.prog, message=translate_message(message)) + "\n")


def _number(text):
    # "nan" and "inf" are not Python literals, but float() reads them (and the check
    # then refuses them); any other word stays a string for the check to name.
    try:
        return float(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _parse_settings(pairs: list[str]) -> dict:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"--set takes key=value (e.g. --set steps=10), got {pair!r}")
        try:
            settings[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            settings[key] = value  # a bare word stays a string
    return settings


def under_torchrun() -> bool:
    """True inside a process started by torchrun (it sets these variables)."""
    return "TORCHELASTIC_RUN_ID" in os.environ or {"RANK", "WORLD_SIZE", "MASTER_ADDR"} <= set(os.environ)


def _run_under_torchrun(exp, settings, backend, timeout, out):
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"]))
    chosen, reason = choose_backend(backend, local_world)
    runtime.setup_process_group(backend=chosen, timeout=timeout, loopback_only=False)
    try:
        if runtime.rank() == 0:
            print(_("[torchrun] {n} ranks, {backend} backend: {reason}").format(
                n=runtime.world_size(), backend=chosen, reason=reason), flush=True)
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
        result = exp.fn(**settings)
        gathered = [None] * runtime.world_size() if runtime.rank() == 0 else None
        dist.gather_object(result, gathered, dst=0)
        if runtime.rank() == 0:
            _report(exp, gathered, out)
    finally:
        runtime.teardown_process_group()


def _report(exp, results, out):
    if exp.summarize is not None:
        print(exp.summarize(results))
    else:
        for rank, result in enumerate(results):
            print(f"rank {rank}: {result!r}")
    if out:
        with open(out, "wb") as f:
            pickle.dump(results, f)
        print(_("per-rank results written to {out}").format(out=out))


def _add_grade(sub) -> None:
    grade = sub.add_parser(
        "grade", help=_("grade students' notebooks: a CSV and a feedback file per student"),
        description=_("Run every student's submitted notebooks in fresh kernels and check "
                      "each exercise on real ranks (README: Grading)."))
    grade.add_argument("submissions", help=_("a folder with one folder per student, holding "
                                             "the notebooks they filled in"))
    grade.add_argument("--out", default="grades.csv",
                       help=_("the CSV to write (default grades.csv); the feedback files go "
                              "to <stem>-feedback/"))
    grade.add_argument("--timeout", default=600.0, help=_("seconds one notebook may run"),
                       type=_option(lambda v: positive_number(
                           "timeout", _number(v), "pass seconds such as 600.")))
    grade.add_argument("--course", default=None,
                       help=_("the course's notebooks (default: the repository's notebooks/)"))


def _grade(parser, args) -> int:
    # Imported here: `python -m companion run` under torchrun needs none of the grader.
    from .learning.grade import grade
    try:
        grade(args.submissions, args.out, timeout=args.timeout, course=args.course)
    except ValueError as exc:   # a missing folder, no notebooks, an unknown notebook
        parser.error(str(exc))
    return 0


def _fit(parser, args) -> int:
    from .planner import fit
    try:
        return fit.main(args)
    except ValueError as exc:   # an unknown model or GPU, degrees that do not fit the GPUs
        parser.error(str(exc))


def _description() -> str:
    # The docstring in English, byte for byte; its two sentences in the student's language
    # around the example commands, which read the same in every language.
    first, examples, last = __doc__.split("\n\n")
    return "\n\n".join([
        _("Command line: run a registered experiment on real ranks, locally or under torchrun."),
        examples,
        _("Under torchrun every process runs the experiment once; rank 0 gathers the results and\n"
          "prints the summary. Taught in notebook 00; ``fit`` in notebook 09.\n")])


def main(argv=None) -> int:
    parser = _Parser(prog="python -m companion", description=_description(),
                     formatter_class=_RawUsage)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help=_("list the registered experiments"))
    run = sub.add_parser("run", help=_("run an experiment on real ranks"))
    run.add_argument("name")
    run.add_argument("--world-size", default=2, type=_option(lambda v: positive_int(
                         "world_size", v, "pass a whole number of ranks such as 4.")),
                     help=_("ranks to start on this machine (ignored under torchrun)"))
    run.add_argument("--backend", default="auto", choices=["auto", "gloo", "nccl"])
    run.add_argument("--timeout", default=300.0, help=_("seconds before giving up"),
                     type=_option(lambda v: positive_number(
                         "timeout", _number(v), "pass seconds such as 300.")))
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help=_("keyword argument for the experiment (Python literal)"))
    run.add_argument("--out", help=_("write the per-rank results here (pickle)"))
    _add_grade(sub)
    from .planner import fit
    fit.add_arguments(sub.add_parser(
        "fit", help=_("will a layout fit? the planner's memory per GPU beside torch's "
                      "measurement on fake ranks (notebook 09)")))
    args = parser.parse_args(argv)

    if args.command == "fit":
        return _fit(parser, args)

    if args.command == "grade":
        return _grade(parser, args)

    if args.command == "list":
        for name in experiments.names():
            print(f"{name:<24} {experiments.get(name).description}")
        return 0
    try:
        exp = experiments.get(args.name)
        settings = _parse_settings(args.set)   # a ValueError: usage line, exit code 2
        accepts(f"experiment {args.name!r}", exp.fn, (), settings,
                "pass only its parameters with --set.")
        if under_torchrun():
            world = int(os.environ["WORLD_SIZE"])
        else:
            validate_launch(args.world_size, args.timeout, args.backend)
            world = args.world_size
        # In this process, before torchrun's ranks meet or launch() forks: a bad --set
        # value is a usage error (exit code 2), not one traceback per rank.
        run_preflight(exp.fn, (), settings, world)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    if under_torchrun():
        _run_under_torchrun(exp, settings, args.backend, args.timeout, args.out)
    else:
        results = launch(exp.fn, world_size=args.world_size, backend=args.backend,
                         timeout=args.timeout, **settings)
        _report(exp, results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
