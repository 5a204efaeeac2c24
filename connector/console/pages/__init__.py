"""The console's pages, one module each: a handler that reads (queries) and renders (templates)."""
