#!/usr/bin/env bash
# Makes a Python virtual environment with aiohomekit (the HomeKit controller library behind
# Home Assistant's HomeKit Controller) for tests/it/homekit_pairing.rs, and prints the venv's
# python on its last line: run that test with HEARTH_AIOHOMEKIT_PYTHON set to it.
# Usage: bash .ci/aiohomekit.sh [VENV_DIR]   (default: target/aiohomekit-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-target/aiohomekit-venv}"
# The version the driver (tests/homekit/driver.py) was written against; a newer one may move
# the private parts it uses to pair by address.
version="${HEARTH_AIOHOMEKIT_VERSION:-3.2.20}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c "import aiohomekit, sys; sys.exit(aiohomekit.__version__ != '$version')" 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "aiohomekit==$version" >&2
fi
echo "$(cd "$venv" && pwd)/bin/python"
