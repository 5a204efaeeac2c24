"""``connector demo``: the whole job on embedded defaults (fake ERPs on loopback, sync, memories,
contexts), from an installed wheel as from a checkout; no API key, no network."""

from __future__ import annotations

import argparse
from typing import Any

from connector.demo_options import add_arguments


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo", help="serve fake ERPs on loopback, sync them, record memories and print agent contexts"
    )
    add_arguments(parser)
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from connector.demo import run  # the fakes, the stores and the embedder load only when it runs

    return run(args)
