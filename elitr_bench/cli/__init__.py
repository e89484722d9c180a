"""``elitr-bench``: the plugin's own commands next to ``lm_eval``.

Every sub-command lives in a module of this package (one per command or command group)
and registers itself through a ``register(subparsers)`` function, so that this module
stays a thin dispatcher and the library below holds no argparse.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

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
        prog="elitr-bench", description="ELITR-Bench and friends for lm-evaluation-harness."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="run lm_eval with the plugin loaded (arguments go to lm_eval unchanged)",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; bad input exits 2 with one line, not a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["run"]:
            # Everything after ``run`` belongs to lm_eval, ``--help`` and ``--model``
            # included; argparse's REMAINDER cannot take a leading option, so bypass it.
            return run_lm_eval(argv[1:])
        parser = build_parser()
        args = parser.parse_args(argv)
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
