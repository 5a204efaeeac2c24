"""A scoped lexical index of our own in the relational store (BM25 over words, names, numbers, dates).

Same tables and statements on SQLite and PostgreSQL; every read is bounded by one (tenant, customer)
scope. :mod:`tokens` makes the terms, :mod:`index` writes, deletes and searches, :mod:`bm25` scores.
"""
