"""The deployment guide's commands and manifests are ones this version accepts (issue 28, point 2).

What this machine can run is run: every ``connector`` command line of the guide (bash blocks, the
systemd units' ``ExecStart``, the container's ``ENTRYPOINT`` + ``CMD``, the Kubernetes ``args``) parses
with the real command-line parser; the variables it sets are real settings; the exit codes it
tabulates are the CLI's; the Kubernetes CronJob allows one sync at a time with a deadline and does not
retry a configuration error; the systemd units do not restart on a configuration error and take a
SIGTERM exit as success.
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from paths import DOCS

from connector import cli
from connector.commands._terminate import EXIT_INTERRUPTED, EXIT_TERMINATED
from connector.settings import load_settings

GUIDE = DOCS / "guides" / "deployment.md"


def _blocks(language: str) -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def _shell_lines() -> list[list[str]]:
    lines: list[list[str]] = []
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                lines.append(shlex.split(line))
    return lines


def _connector_argvs() -> list[list[str]]:
    """Every connector command line of the guide, as the arguments after ``connector``."""
    argvs: list[list[str]] = []
    for words in _shell_lines():
        if words[0] == "connector":
            argvs.append(words[1:])
        if words[:2] == ["docker", "run"]:  # the image's entrypoint is `connector`
            image = next(i for i, w in enumerate(words) if w == "connector-image")
            argvs.append(words[image + 1 :])
    for block in _blocks("ini"):
        for line in block.splitlines():
            if line.startswith("ExecStart="):
                words = shlex.split(line.removeprefix("ExecStart="))
                assert words[0].endswith("/connector")
                argvs.append(words[1:])
    (dockerfile,) = _blocks("dockerfile")
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.*)$", dockerfile, re.MULTILINE).group(1))  # type: ignore[union-attr]
    cmd = json.loads(re.search(r"^CMD (.*)$", dockerfile, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert entrypoint == ["connector"]
    argvs.append(cmd)
    for container in _cronjob()["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]:
        argvs.append(container["args"])
    argvs.append(shlex.split(re.search(r"`args: (\[.*?\])`", GUIDE.read_text()).group(1).replace(",", "")))  # type: ignore[union-attr]
    return argvs


def _cronjob() -> dict[str, Any]:
    (manifest,) = _blocks("yaml")
    (document,) = list(yaml.safe_load_all(manifest))
    assert document["kind"] == "CronJob"
    return dict(document)


def test_every_connector_command_of_the_guide_parses() -> None:
    argvs = _connector_argvs()
    commands = {argv[0] for argv in argvs}
    assert {"schedule", "sync", "mcp", "db", "doctor"} <= commands
    parser = cli.build_parser()
    for argv in argvs:
        args = parser.parse_args([a.strip('"[]') for a in argv])  # SystemExit(2) on a wrong command
        assert getattr(args, "handler", None) is not None, argv


def test_the_variables_the_guide_sets_are_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exported = dict(
        word.split("=", 1)
        for words in _shell_lines()
        if words[0] == "export"
        for word in words[1:]
        if word.startswith("CONNECTOR_") and not word.endswith("=...")
    )
    assert {"CONNECTOR_DATABASE__URL", "CONNECTOR_CHROMA__HOST", "CONNECTOR_CHROMA__PORT"} <= exported.keys()
    config = tmp_path / "connector.toml"
    config.write_text('data_dir = "data"\n')
    for name, value in exported.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CONNECTOR_CONFIG_FILE", str(config))
    settings = load_settings()
    assert settings.database_url == exported["CONNECTOR_DATABASE__URL"]
    assert settings.chroma.host == exported["CONNECTOR_CHROMA__HOST"]
    assert settings.chroma.port == int(exported["CONNECTOR_CHROMA__PORT"])
    assert settings.mcp.token_env == "CONNECTOR_MCP_TOKEN"
    env = {e["name"] for c in _cronjob()["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
           for e in c["env"]}  # fmt: skip
    assert {"CONNECTOR_CONFIG_FILE", "CONNECTOR_DATABASE__URL", "CONNECTOR_CHROMA__HOST"} <= env


def test_the_exit_code_table_is_the_clis() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (\d+(?: / \d+)?) \| ([^|]+) \|", text, flags=re.MULTILINE))
    assert rows["2"].startswith("configuration") and cli.EXIT_CONFIG == 2
    assert rows["3"].startswith("another sync") and cli.EXIT_ALREADY_RUNNING == 3
    assert rows["4"].startswith("partly failed") and cli.EXIT_PARTLY_FAILED == 4
    assert rows["5"].startswith("a store") and cli.EXIT_STORE == 5
    assert f"{EXIT_INTERRUPTED} / {EXIT_TERMINATED}" in rows


def test_the_cronjob_runs_one_sync_at_a_time_with_deadlines() -> None:
    spec = _cronjob()["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["startingDeadlineSeconds"] > 0
    job = spec["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    assert job["activeDeadlineSeconds"] > pod["terminationGracePeriodSeconds"] > 0
    assert pod["restartPolicy"] == "Never"  # podFailurePolicy needs it
    (fail_on_config,) = [r for r in job["podFailurePolicy"]["rules"] if r["action"] == "FailJob"]
    assert fail_on_config["onExitCodes"]["values"] == [cli.EXIT_CONFIG]


def test_the_systemd_units_restart_on_failure_but_not_on_a_configuration_error() -> None:
    units = _blocks("ini")
    assert len(units) == 2
    for unit in units:
        parsed = configparser.ConfigParser(strict=False, interpolation=None)
        parsed.optionxform = str  # type: ignore[assignment,method-assign]
        parsed.read_string(unit)
        service = parsed["Service"]
        assert service["Restart"] == "on-failure"
        assert str(cli.EXIT_CONFIG) in service["RestartPreventExitStatus"].split()
        assert str(EXIT_TERMINATED) in service["SuccessExitStatus"].split()
