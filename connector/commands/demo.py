"""``connector demo``: the whole job on embedded defaults (fake ERPs on loopback, sync, memories,
contexts), from an installed wheel as from a checkout; no API key, no network."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options, shared by ``connector demo`` and ``python -m connector.demo``."""
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".data/demo"), help="where the demo keeps its stores"
    )
    parser.add_argument("--customers", type=int, default=300, help="customers per fake ERP")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget", type=int, default=1200, help="token budget of each printed context")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo", help="serve fake ERPs on loopback, sync them, record memories and print agent contexts"
    )
    add_arguments(parser)
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from connector.demo import run  # the fakes, the stores and the embedder load only when it runs

    return run(args)
