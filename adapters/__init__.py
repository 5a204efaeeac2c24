"""ERP adapters, installed as ``connector.adapters``: one package per ERP plus the shared HTTP plumbing.

Adapters know HTTP and the ERP's dialect and nothing about storage. They implement the contract in
:mod:`connector.erp` (the ``Adapter`` protocol, canonical records, ``Page``) and are opened through
:func:`connector.adapters.factory.open_adapter`. Nothing in ``connector.erp``, ``connector.db`` or
``connector.sync`` imports this package (the sync job is handed an ``AdapterFactory``), so the
dependency points one way. The shared parts: ``http`` (retries, limits, the error table), ``auth``
(the ``LoginFlow`` both ERPs log in with), ``paging`` (one paginator per style) and ``catalog``
(both ERPs declare their streams in TOML under ``config/``).
"""
