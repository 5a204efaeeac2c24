"""The ERP sync job: windows, watermarks, locks, run log, progress and the scheduler.

Deliberately empty of imports: importing ``connector.sync.tables`` (``connector.schema`` does) must
not pull in the runner. Import from the submodules (``connector.sync.runner.SyncRunner``).
"""
