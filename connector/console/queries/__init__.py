"""Read-only queries behind the console's pages, one module per page; each reads one scope."""
