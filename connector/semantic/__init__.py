"""Semantic memory over time: the changes the sync sees in the ERP's facts, kept as history.

The ERP keeps only current values (its audit log is rarely readable through the API); every sync
already sees each change, so it records one row per changed tracked field in the same
transaction as the upsert. Reads answer "what changed and when" and rebuild facts as of a date.
"""
