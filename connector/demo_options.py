"""The demo's command-line options, shared by ``connector demo`` and ``python -m connector.demo``."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options, shared by ``connector demo`` and ``python -m connector.demo``."""
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".data/demo"), help="where the demo keeps its stores"
    )
    parser.add_argument("--customers", type=int, default=300, help="customers per fake ERP")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget", type=int, default=1200, help="token budget of each printed context")
    parser.add_argument(
        "--hostile-names",
        action="store_true",
        help="give a few customers names and an id with HTML and scripts in them (to test a UI's escaping)",
    )
