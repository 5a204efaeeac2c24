"""A non-editable install ships prompts/ and config/ as package data and finds them at run time."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("*.whl"))


def test_wheel_contains_prompts_config_and_console_script(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "connector/_data/config/connector.example.toml" in names
    assert any(n.startswith("connector/_data/prompts/") for n in names)
    assert any(n.startswith("adapters/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "connector = connector.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_resources_resolve_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = (
        "import connector.resources as r; "
        "print(r.config_dir()); print((r.config_dir() / 'connector.example.toml').is_file())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    where, exists = result.stdout.split()
    assert where.startswith(str(target))
    assert exists == "True"
