"""The vendored tokenizer, default model and NOTICE ship in the wheel, so the embedder works installed."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from paths import ROOT

from connector.embeddings.minilm import QINT8_MHA_SHA256, QINT8_SHA256, TOKENIZER_SHA256


def test_wheel_ships_the_verified_tokenizer_model_and_notice(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = zipfile.ZipFile(next(tmp_path.glob("*.whl")))
    tokenizer = wheel.read("connector/embeddings/minilm_files/tokenizer.json")
    assert hashlib.sha256(tokenizer).hexdigest() == TOKENIZER_SHA256
    model = wheel.read("connector/embeddings/minilm_files/model_qint8_mha.onnx")
    assert hashlib.sha256(model).hexdigest() == QINT8_MHA_SHA256
    previous = wheel.read("connector/embeddings/minilm_files/model_qint8.onnx")
    assert hashlib.sha256(previous).hexdigest() == QINT8_SHA256
    assert "Apache" in wheel.read("connector/embeddings/minilm_files/NOTICE").decode()
