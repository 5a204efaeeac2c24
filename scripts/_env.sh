# Shared by scripts/*: create or reuse .venv and install the project when its inputs changed.
# Needs only Python 3.11+ on PATH (python3.11, python3.12, ... or python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "$candidate"; return 0
    fi
  done
  echo "error: Python 3.11 or newer is required" >&2; return 1
}
VENV="${CONNECTOR_VENV:-$ROOT/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  "$(pick_python)" -m venv "$VENV"
fi
EXTRAS="${CONNECTOR_EXTRAS:-test,langgraph,docs}"
STAMP="$VENV/.connector-install-$(cat pyproject.toml | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$STAMP" ]; then
  echo "Installing the connector and its dependencies into $VENV (first run takes a few minutes)..." >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
  "$VENV/bin/python" -m pip install --quiet -e ".[$EXTRAS]" >&2
  rm -f "$VENV"/.connector-install-*
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
