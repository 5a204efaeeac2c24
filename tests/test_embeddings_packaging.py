"""The vendored tokenizer and its NOTICE ship inside the wheel, so the default embedder works installed."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from connector.embeddings.minilm import TOKENIZER_SHA256

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_the_verified_tokenizer_and_its_notice(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = zipfile.ZipFile(next(tmp_path.glob("*.whl")))
    tokenizer = wheel.read("connector/embeddings/minilm_files/tokenizer.json")
    assert hashlib.sha256(tokenizer).hexdigest() == TOKENIZER_SHA256
    assert "Apache" in wheel.read("connector/embeddings/minilm_files/NOTICE").decode()
