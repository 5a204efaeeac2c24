"""The wheel: one top-level package (``connector``, adapters inside it), prompts/ and config/ as data.

Built offline with the project's own build backend (hatchling's API), the way pip would build it.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from hatchling.builders.sdist import SdistBuilder
from hatchling.builders.wheel import WheelBuilder
from paths import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    (built,) = WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])
    return Path(built)


def _top_level(names: list[str]) -> set[str]:
    """The importable names a wheel puts into site-packages (its dist-info excluded)."""
    return {n.split("/", 1)[0].removesuffix(".py") for n in names if ".dist-info/" not in n}


def test_wheel_installs_only_the_projects_own_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert _top_level(names) == {"connector"}
    assert "connector/adapters/acumatica/adapter.py" in names  # the adapters/ folder, under our name
    assert "connector/adapters/sap/adapter.py" in names
    assert "connector/erp/records.py" in names


def test_a_wheel_built_from_the_sdist_has_the_adapters_too(tmp_path: Path) -> None:
    """``python -m build`` makes the wheel from the sdist, which holds adapters/ but not the link."""
    (sdist,) = SdistBuilder(str(ROOT)).build(directory=str(tmp_path / "sdist"), versions=["standard"])
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "src", filter="tar")
    (source,) = (tmp_path / "src").iterdir()
    (built,) = WheelBuilder(str(source)).build(directory=str(tmp_path / "wheel"), versions=["standard"])
    names = zipfile.ZipFile(built).namelist()
    assert _top_level(names) == {"connector"}
    assert "connector/adapters/sap/adapter.py" in names


def test_wheel_ships_no_benchmark_or_stub_code(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if "bench" in n or "stub" in n] == []
    assert "connector/testing/acumatica.py" in names  # the fake ERPs are the test kit users import


def test_wheel_contains_prompts_config_and_console_script(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "connector/_data/config/connector.example.toml" in names
    assert any(n.startswith("connector/_data/prompts/") for n in names)
    # the web console's templates and stylesheet ship with it (no CDN, nothing fetched)
    assert {"connector/console/templates/base.html", "connector/console/static/console.css"} <= set(names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "connector = connector.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_resources_resolve_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = (
        "import connector.resources as r, connector.adapters.acumatica.streams as s; "
        "print(r.config_dir()); print((r.config_dir() / 'connector.example.toml').is_file()); "
        "print(s.__file__, len(s.STREAMS))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    where, exists, adapters, acumatica_streams = result.stdout.split()
    assert where.startswith(str(target))
    assert exists == "True"
    assert adapters.startswith(str(target))
    assert acumatica_streams == "6"  # the catalog is read from the wheel's own data


@pytest.mark.slow
def test_connector_demo_runs_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    """``connector demo`` needs nothing of the checkout: the wheel's own package, data and fakes."""
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = (
        "import sys, connector; from connector.cli import main; "
        f"assert connector.__file__.startswith({str(target)!r}), connector.__file__; "
        "sys.exit(main(['demo', '--customers', '20', '--data-dir', 'demo-data']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Invoice dispute" in result.stdout and "## ERP facts" in result.stdout
    assert (tmp_path / "demo-data").is_dir()
