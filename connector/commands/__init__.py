"""CLI sub-commands, one module per feature area, each with ``register(subparsers)``."""
