"""The flags several commands share, spelled and read back in one place: ``--backend``,
``--workers``/``--scheduler``/``--executor``, ``--oracle``, ``-o``/``--to``, ``--quiet`` and
``--json``. A command that fans work out gets the same executor flags as every other one.
"""

from __future__ import annotations

import argparse
import os

from pmsolve.backends import ENV_VAR as BACKEND_ENV_VAR
from pmsolve.backends import names as backend_names
from pmsolve.backends import requested_name
from pmsolve.executor import ENV_VAR as EXECUTOR_ENV_VAR
from pmsolve.executor import KINDS, Executor, open_executor, use_executor
from pmsolve.formats import MAPPING_FORMATS

ORACLE_HELP = "simulated:MAPPING.json[?r_max=5&noise=0.01&seed=1] or recorded:MEASUREMENTS.json"


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    """``--backend NAME`` (default: ``$PMSOLVE_BACKEND`` or auto)."""
    parser.add_argument("--backend", metavar="NAME", default=requested_name(None),
                        help=f"solver backend: auto or one of {', '.join(backend_names())} "
                             f"(default: ${BACKEND_ENV_VAR} or auto; see `pmsolve backends`)")


def add_executor_arguments(parser: argparse.ArgumentParser, *, workers: bool = True, default_workers: int = 1,
                           workers_help: str = "parallel workers") -> None:
    """``--workers N``, ``--scheduler tcp://HOST:PORT`` and ``--executor KIND`` (read them back with
    :func:`executor_from_args`). ``workers=False`` for a command that has its own ``--workers``."""
    if workers:
        parser.add_argument("--workers", type=int, default=default_workers,
                            help=f"{workers_help} (default {default_workers}; a local process pool, or with "
                                 f"--executor dask a Dask LocalCluster of that many processes)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="run the work on this Dask scheduler's workers (pip install 'pmsolve[dask]')")
    parser.add_argument("--executor", choices=KINDS, default=None,
                        help=f"serial, pool or dask (default: ${EXECUTOR_ENV_VAR} or auto: dask with --scheduler, "
                             f"serial for 1 worker, else pool)")


def executor_from_args(args: argparse.Namespace, *, workers: int | None = None,
                       optional: bool = False) -> Executor | None:
    """The executor the flags name. ``optional``: None unless ``--executor``, ``--scheduler`` or
    ``$PMSOLVE_EXECUTOR`` asks for one (for commands whose default is their own threads)."""
    kind, scheduler = getattr(args, "executor", None), getattr(args, "scheduler", None)
    if optional and not (kind or scheduler or os.environ.get(EXECUTOR_ENV_VAR)):
        return None
    n = workers if workers is not None else (getattr(args, "workers", None) or 1)
    return open_executor(kind, workers=n, scheduler=scheduler)


def extend_with_executor(parser: argparse.ArgumentParser) -> None:
    """Give a command that has its own ``--workers`` the ``--scheduler``/``--executor`` flags:
    when asked for, its handler runs with that executor ambient (:func:`~pmsolve.executor.use_executor`),
    which is how the flags reach library code that was not handed an executor."""
    add_executor_arguments(parser, workers=False)
    inner = parser.get_default("func")

    def run(args: argparse.Namespace) -> int:
        ex = executor_from_args(args, optional=True)
        if ex is None:
            return inner(args)
        with ex, use_executor(ex):
            return inner(args)

    parser.set_defaults(func=run)


def add_oracle_argument(parser: argparse.ArgumentParser, help: str = ORACLE_HELP) -> None:
    parser.add_argument("--oracle", required=True, help=help)


def add_mapping_output(parser: argparse.ArgumentParser, help: str = "write the inferred mapping here") -> None:
    """``-o FILE`` and ``--to FORMAT`` for commands that write a mapping."""
    parser.add_argument("-o", "--out", help=help)
    parser.add_argument("--to", choices=MAPPING_FORMATS, default="pmsolve", help="format of --out (default: pmsolve)")


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def add_json_argument(parser: argparse.ArgumentParser, help: str = "machine-readable output") -> None:
    parser.add_argument("--json", action="store_true", help=help)
