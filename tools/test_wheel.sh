#!/usr/bin/env bash
# The README's test command: test what users install.
#
# Builds the sdist, and the wheel from that sdist (`python -m build`, as a release does, with the
# compiled integer codec and key folds required: RECORDIO_REQUIRE_CODEC=1), checks both with twine, installs the
# wheel (not editable) with the `dev` extra into a fresh virtualenv, and runs the test suite against
# that installed package from a folder outside the checkout, so that nothing imports the sources
# (tests/test_packaging.py checks that recordio comes from site-packages in this run).
#
#   bash tools/test_wheel.sh                 # the whole suite (what CI runs)
#   bash tools/test_wheel.sh -m "not slow"   # arguments go to pytest (default: -q)
#
# RECORDIO_WHEEL_VENV names the virtualenv (default: .venv-wheel in the checkout, made anew each run).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${RECORDIO_WHEEL_VENV:-$ROOT/.venv-wheel}"
DIST="$ROOT/dist"

rm -rf "$VENV" "$DIST"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip build twine
RECORDIO_REQUIRE_CODEC=1 "$VENV/bin/python" -m build --outdir "$DIST" "$ROOT" >"$VENV/build.log" 2>&1 \
  || { tail -50 "$VENV/build.log"; echo "test_wheel: the build failed (log above)" >&2; exit 1; }
"$VENV/bin/twine" check --strict "$DIST"/*
WHEEL="$(ls "$DIST"/*.whl)"
SDIST="$(ls "$DIST"/*.tar.gz)"
"$VENV/bin/pip" install -q torch==2.13.0 "$WHEEL[dev]"

# Which optional C extensions the wheel holds (the codec and the key folds are required, the vision ones optional).
(cd / && "$VENV/bin/python" - <<'EOF'
import importlib
from recordio.compiled import PARTS
for name in PARTS:
    try:
        importlib.import_module(name)
        print(f"test_wheel: {name}: built")
    except ImportError as exc:
        print(f"test_wheel: {name}: not built ({exc})")
EOF
)

RUN="$(mktemp -d)"
trap 'rm -rf "$RUN"' EXIT
cd "$RUN"
status=0
RECORDIO_TEST_INSTALLED=1 RECORDIO_WHEEL="$WHEEL" RECORDIO_SDIST="$SDIST" \
  "$VENV/bin/python" -m pytest -p no:cacheprovider "$ROOT/tests" "${@:--q}" || status=$?
exit "$status"
