"""The ERP sync job: windows, watermarks, locks, run log, progress and the scheduler.

Deliberately empty of imports: ``connector.db.models`` imports ``connector.sync.tables`` and must
not pull in the runner. Import from the submodules (``connector.sync.runner.SyncRunner``).
"""
