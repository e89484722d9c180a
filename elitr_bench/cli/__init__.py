"""``elitr-bench``: the plugin's own commands next to ``lm_eval``.

Every sub-command lives in a module of this package (one per command or command group)
and registers itself through a ``register(subparsers)`` function, so that this module
stays a thin dispatcher and the library below holds no argparse.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Iterator, Sequence

from elitr_bench import __version__
from elitr_bench.data.errors import ElitrBenchError

#: Modules contributing sub-commands through ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = (
    "elitr_bench.cli.data",
    "elitr_bench.cli.score",
    "elitr_bench.cli.noise",
    "elitr_bench.cli.report",
    "elitr_bench.cli.mesa",
    "elitr_bench.cli.arena",
    "elitr_bench.cli.minutes_check",
    "elitr_bench.cli.read_reply",
    "elitr_bench.cli.cache",
)

Handler = Callable[[argparse.Namespace], int]

#: Where the docs pages are read, for a clone and an installed wheel alike: the project's
#: Homepage (``pyproject.toml``) plus the path of the page in the repository, so the part
#: after ``blob/main/`` is also the page's path in a clone.
DOCS_URL = "https://github.com/lm-eval-elitr/lm-eval-elitr/blob/main/"

#: The docs page (and section) that explains each command; its ``--help`` ends with it.
#: ``run`` has none: its ``--help`` is lm_eval's own.
COMMAND_DOCS: dict[str, str] = {
    "tasks-dir": "docs/operations.md#how-the-plugin-loads",
    "data": "docs/operations.md#offline-use-and-data",
    "score": "docs/judges.md#judging-later-score-and-judge-check",
    "judge-check": "docs/judges.md#judging-later-score-and-judge-check",
    "read-reply": "docs/judges.md#how-a-judge-reply-becomes-a-number",
    "noise": "docs/tasks.md#noisy-transcripts",
    "report": "docs/reproducing.md#reports-the-papers-tables-from-any-runs",
    "minutes-check": "docs/minutes.md#meta-evaluation-minutes-check",
    "arena": "docs/minutes.md#cream-arena-which-run-writes-better-minutes",
    "mesa": "docs/minutes.md#mesa-which-errors-are-in-the-minutes",
    "mesa-train": "docs/minutes.md#mesa-which-errors-are-in-the-minutes",
    "cache": "docs/operations-cache-and-plugins.md#elitr-bench-cache-infopruneclear",
}
#: The index of the docs, named at the end of ``elitr-bench --help``.
DOCS_INDEX = "docs/README.md"
_DOCS_PREFIX = "Docs: "


def docs_line(page: str) -> str:
    """The last line of a command's ``--help``: the URL of the page that explains it."""
    return f"{_DOCS_PREFIX}{DOCS_URL}{page}"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with one line per sub-command and an unbroken docs URL.

    argparse measures sub-command names two columns short of their indent, so a name as
    long as ``minutes-check`` would push its help onto the next line; and it breaks words
    longer than the line, which would cut the docs URL in two (it stays on one line).
    """

    def add_argument(self, action: argparse.Action) -> None:
        """Measure sub-command names at the indent they are printed with."""
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action, argparse._SubParsersAction):
            self._action_max_length += 2  # the sub-actions' own indent, which argparse drops

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(_DOCS_PREFIX):  # one line, whatever the width: a URL to copy
            return indent + text
        return super()._fill_text(text, width, indent)


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse._SubParsersAction]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield action


#: A Sphinx cross-reference (``:func:`~elitr_bench.llm.cache.open_cache```, ``:mod:`json```).
_ROLE = re.compile(r":(?:[\w-]+:)*[\w-]+:`([^`]+)`")
#: A Sphinx inline literal (````name````).
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def _role_text(match: re.Match[str]) -> str:
    """What a reader of ``--help`` sees for a cross-reference: the name it points at."""
    target = match.group(1).strip()
    if "<" in target and target.endswith(">"):  # :ref:`title <label>`: the title
        return target.split("<", 1)[0].strip()
    if target.startswith("~"):  # Sphinx shows only the last part
        return target[1:].rsplit(".", 1)[-1]
    return target.lstrip(".")


def plain_text(text: str) -> str:
    """``text`` without Sphinx markup: ``--help`` is read in a terminal, not rendered.

    Several commands take their description from a module docstring, written for the API
    docs; their roles and double backticks would be printed as they are.
    """
    return _LITERAL.sub(r"\1", _ROLE.sub(_role_text, text))


def _plain_help(parser: argparse.ArgumentParser) -> None:
    """Make ``parser``'s texts, and all its sub-commands', plain (:func:`plain_text`)."""
    if parser.description:
        parser.description = plain_text(parser.description)
    if parser.epilog:
        parser.epilog = plain_text(parser.epilog)
    for action in parser._actions:
        if isinstance(action.help, str):
            action.help = plain_text(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if isinstance(choice.help, str):
                    choice.help = plain_text(choice.help)
            for child in action.choices.values():
                _plain_help(child)


def _add_docs(parser: argparse.ArgumentParser, page: str) -> None:
    """End ``parser``'s help, and its own sub-commands' (``data fetch``), with ``page``."""
    parser.formatter_class = HelpFormatter
    parser.epilog = docs_line(page)
    for sub in _subparsers(parser):
        for child in sub.choices.values():
            _add_docs(child, page)


def run_lm_eval(lm_eval_args: Sequence[str]) -> int:
    """``elitr-bench run ARGS``: exactly ``lm_eval ARGS``, with our tasks and models loaded.

    The hook is installed whatever ``ELITR_BENCH_NO_HOOK`` or a disabled ``.pth`` file
    says, so this is the complete fallback: tasks *and* models (``elitr-replay``,
    ``hf-prefix``), which ``--include_path`` alone cannot give.
    """
    import elitr_bench._hook as hook

    hook.install(force=True)
    from lm_eval.__main__ import cli_evaluate

    args = list(lm_eval_args)
    if args[:1] == ["--"]:
        args = args[1:]
    sys.argv = ["lm_eval", *args]
    cli_evaluate()
    return 0


def _run(args: argparse.Namespace) -> int:
    """Parser handler of ``run`` (``main`` normally short-cuts it, see there)."""
    return run_lm_eval(args.lm_eval_args)


def _tasks_dir(args: argparse.Namespace) -> int:
    """Print our task folder, for ``lm_eval --include_path $(elitr-bench tasks-dir)``."""
    from elitr_bench.tasks import TASKS_DIR

    print(TASKS_DIR)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The full ``elitr-bench`` parser, with every area's sub-commands."""
    parser = argparse.ArgumentParser(
        prog="elitr-bench",
        description="ELITR-Bench and friends for lm-evaluation-harness.",
        epilog=docs_line(DOCS_INDEX),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="lm_eval with the plugin loaded (arguments go to lm_eval)",
        add_help=False,
    )
    run.add_argument("lm_eval_args", nargs=argparse.REMAINDER)
    run.set_defaults(handler=_run)

    tasks_dir = sub.add_parser("tasks-dir", help="print the folder holding our task YAML files")
    tasks_dir.set_defaults(handler=_tasks_dir)

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    for name, child in sub.choices.items():
        if name in COMMAND_DOCS:
            _add_docs(child, COMMAND_DOCS[name])
    _plain_help(parser)
    return parser


def unknown_arguments(
    parser: argparse.ArgumentParser, argv: Sequence[str], extra: Sequence[str]
) -> str:
    """One line for arguments the command does not take, with the closest flag it has.

    argparse's own message names neither the command nor a fix, and prints the top-level
    usage, which lists no option of the command the user typed (``cache info`` included).
    """
    import difflib

    names: list[str] = []
    child = parser
    for token in argv:
        sub = next((s.choices[token] for s in _subparsers(child) if token in s.choices), None)
        if sub is None:
            if list(_subparsers(child)):
                continue
            break
        names.append(token)
        child = sub
    command = " ".join(["elitr-bench", *names])
    flags = sorted({o for a in child._actions for o in a.option_strings if o.startswith("--")})
    first = extra[0]
    if not first.startswith("-"):
        return f"{command} takes no argument {first!r}; {command} --help lists what it takes"
    flag = first.split("=", 1)[0]
    close = difflib.get_close_matches(flag, flags, n=1, cutoff=0.6)
    fix = f"did you mean {close[0]}? " if close else ""
    return f"{command} has no option {flag}; {fix}{command} --help lists its options"


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; bad input exits 2 with one line, not a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["run"]:
            # Everything after ``run`` belongs to lm_eval, ``--help`` and ``--model``
            # included; argparse's REMAINDER cannot take a leading option, so bypass it.
            return run_lm_eval(argv[1:])
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:
            raise ElitrBenchError(unknown_arguments(parser, argv, extra))
        handler: Handler = args.handler
        return int(handler(args) or 0)
    except ElitrBenchError as exc:
        from elitr_bench.cli_errors import debug_enabled, error_line

        if debug_enabled():  # ELITR_BENCH_DEBUG=1: the traceback, for bug reports
            raise
        print(error_line(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
