"""ERP adapters, installed as ``connector.adapters``: one package per ERP plus the shared HTTP plumbing.

Adapters know HTTP and the ERP's dialect and nothing about storage. They implement the contract in
:mod:`connector.erp` (the ``Adapter`` protocol, canonical records, ``Page``) and are opened through
:func:`connector.adapters.factory.open_adapter`. Nothing in ``connector.erp``, ``connector.db`` or
``connector.sync`` imports this package at module level, so the dependency points one way.
"""
