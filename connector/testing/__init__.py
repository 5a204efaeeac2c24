"""Fake ERPs for tests and demos, importable from users' own test suites.

``FakeAcumatica`` (and ``connector.testing.sap.FakeSAP``) answer ``httpx.Request`` objects like
the real APIs; :func:`serve` runs one on loopback. Pytest fixtures live in
``connector.testing.pytest_plugin`` (``pytest_plugins = ["connector.testing.pytest_plugin"]``).
"""

from connector.testing.acumatica import FakeAcumatica, ServedRequest
from connector.testing.acumatica_faults import Fault
from connector.testing.datagen import DataGen
from connector.testing.server import ServedFake, serve

__all__ = ["DataGen", "FakeAcumatica", "Fault", "ServedFake", "ServedRequest", "serve"]
