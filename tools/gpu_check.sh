#!/usr/bin/env bash
# The GPU checks in one run, on a machine with CUDA and a python that has torch (docs/gpu.md):
# the `gpu` test tier, the mutants (each of the sink's waits removed in a scratch copy must make
# the tier fail), tools/bench_sink.py and tools/bench_vision.py with --device cuda, and the main
# job on cuda. Each step has its own time limit, so one that hangs does not hide the others; each
# step's log goes to $OUT (default out/gpu-check). The package is installed editable (no
# dependencies fetched) where `recordio.tools` does not import.
#
#     OUT=out/gpu-check PYTHON=python3 bash tools/gpu_check.sh [quick]
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-out/gpu-check}"
PY="${PYTHON:-python3}"
QUICK="${1:-}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

step() {        # step NAME SECONDS COMMAND...: run with a limit, log to $OUT/NAME.log, print its tail
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc $rc in $((SECONDS - t0)) s"
    tail -n "${TAIL:-25}" "$OUT/$name.log"
}

"$PY" -c "import recordio.tools" 2>/dev/null || "$PY" -m pip install -q --no-deps --no-build-isolation --no-index -e . >"$OUT/install.log" 2>&1

step env 60 bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; \
  $PY -c 'import sys, torch, numpy, cv2; print(sys.version); print(\"torch\", torch.__version__, \"cuda\", \
torch.version.cuda, torch.cuda.get_device_name(0), \"numpy\", numpy.__version__, \"cv2\", cv2.__version__)'"
step build 120 "$PY" setup.py build_ext --inplace
step extensions 30 "$PY" -c "import recordio.mindrecord.codec as c, importlib; print('codec', c.BACKEND); \
[print(m, bool(importlib.util.find_spec(m))) for m in ('recordio.vision._kernels', 'recordio.vision._jpeg')]"
TIMEOUT=""
"$PY" -c "import pytest_timeout" 2>/dev/null && TIMEOUT="--timeout 120"
if [ "$QUICK" = quick ]; then
    step gpu-tier 240 "$PY" -m pytest -q -p no:cacheprovider -m gpu -rs --tb=short $TIMEOUT \
        tests/test_sink_cuda.py tests/test_offload.py tests/test_offload_pipeline.py tests/test_sink.py
    exit 0
fi
TAIL=40 step gpu-tier 180 "$PY" -m pytest -q -p no:cacheprovider -m gpu -rs --tb=short $TIMEOUT \
    tests/test_sink_cuda.py tests/test_offload.py tests/test_offload_pipeline.py tests/test_sink.py \
    tests/test_main_job.py
# Each wait the sink relies on, removed in a scratch copy: the lagging-stream tests must then fail.
mutant() {      # mutant NAME FILE OLD NEW
    local name=$1 file=$2 dir=/tmp/recordio-mutant-$1
    rm -rf "$dir" && mkdir -p "$dir" && cp -r recordio tests setup.py pyproject.toml "$dir"/
    if ! "$PY" - "$dir/$file" "$3" "$4" <<'PYEOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert text.count(old) == 1, f"{path}: {old!r} found {text.count(old)} times"
open(path, "w").write(text.replace(old, new))
PYEOF
    then echo "== mutant $name: could not be made"; return; fi
    (cd "$dir" && PYTHONPATH="$dir" timeout --kill-after=10 60 "$PY" -m pytest -q -p no:cacheprovider -x \
        -k lagging tests/test_sink_cuda.py) >"$OUT/mutant-$name.log" 2>&1
    case $? in
        1) echo "== mutant $name: caught ($(grep -m1 -o 'FAILED [^ ]*' "$OUT/mutant-$name.log"))" ;;
        0) echo "== mutant $name: NOT caught (the lagging tests passed without it)" ;;
        *) echo "== mutant $name: error"; tail -n 15 "$OUT/mutant-$name.log" ;;
    esac
}
mutant consumer-wait recordio/sink/backends.py "torch.cuda.current_stream(self.device).wait_event(event)" "pass"
mutant record-stream recordio/sink/backends.py "tensor.record_stream(torch.cuda.current_stream(self.device))" "pass"
mutant slot-release-wait recordio/sink/backends.py "self._stream.wait_event(event)" "pass"
mutant ring-host-wait recordio/sink/ring.py "self._backend.host_wait(event)" "pass"

step bench-sink 90 "$PY" tools/bench_sink.py --device cuda --rows 10000 --steps 100 --rounds 2
# the same with a host map that uses the machine's cores (2 workers leave it pipeline-bound)
step bench-sink-workers 90 "$PY" tools/bench_sink.py --device cuda --rows 10000 --steps 100 --rounds 2 \
    --workers "$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))"
step bench-vision 120 "$PY" tools/bench_vision.py --device cuda --images 1024 --repeat 3 --tail-batches 24
step main-job 90 "$PY" examples/main_job.py --device cuda --out /tmp/recordio-main-job
