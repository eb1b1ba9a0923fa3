#!/usr/bin/env bash
# The Python the cache initializer's end-to-end test runs Trainer's cache.py with: a venv with the
# `kubernetes` client that Trainer v2.3.0's dataset-initializer image locks
# (cmd/initializers/dataset/uv.lock), from PyPI, cached by version beside the binaries. A warm run
# does nothing. Prints the venv's python.
set -euo pipefail
KUBERNETES_PY_VERSION=36.0.3
venv="${TJW_PY_CACHE:-$HOME/.cache/trainjob-webhook}/py-kubernetes-${KUBERNETES_PY_VERSION}"
if ! "$venv/bin/python" -c "import kubernetes, sys; sys.exit(kubernetes.__version__ != '${KUBERNETES_PY_VERSION}')" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes==${KUBERNETES_PY_VERSION}" >&2
fi
echo "$venv/bin/python"
