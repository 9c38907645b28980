#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# main job on a built-in example, with no input needed:
#   1. write a sample .hrry model quantized with all five schemes;
#   2. serve it on loopback with `hurray serve`;
#   3. ingest it over the network protocol with `hurray ingest`, validating
#      and dequantizing every tensor as it arrives, and print the summary;
#   4. load every output with numpy: shape, dtype and a checksum.
# tools/test.sh runs it last (//tools:demo), so this can never break unseen.
# Idempotent; everything it writes goes to a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install_deps.sh
bazel build -c opt //tools:hurray >/dev/null 2>&1 || bazel build -c opt //tools:hurray
hurray="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/hurray"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [[ -n "${server_pid}" ]] && kill "${server_pid}" 2>/dev/null || true
  rm -rf "${work}"
}
trap cleanup EXIT

echo "== hurray pack --sample: a small model, one tensor per quantization scheme"
"${hurray}" pack --sample -o "${work}/sample.hrry"
"${hurray}" inspect "${work}/sample.hrry"
echo

echo "== hurray serve: streaming it on 127.0.0.1 (a free port)"
"${hurray}" serve "${work}/sample.hrry" --port 0 >"${work}/serve.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 100); do
  port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "${work}/serve.log")"
  [[ -n "${port}" ]] && break
  kill -0 "${server_pid}" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "${port}" ]]; then
  echo "hurray serve did not start:" >&2
  cat "${work}/serve.log" >&2
  exit 1
fi
cat "${work}/serve.log"
echo

echo "== hurray ingest tcp://127.0.0.1:${port} --dequant OUT: validate + dequantize as bytes arrive"
"${hurray}" ingest "tcp://127.0.0.1:${port}" --dequant "${work}/out"
echo
echo "== what a user gets: each output loaded with numpy (shape, dtype, sum)"
/usr/bin/python3 - "${work}/out" <<'PY'
import pathlib, sys, numpy
outs = sorted(pathlib.Path(sys.argv[1]).glob("*.npy"))
if not outs:
    sys.exit("demo: no .npy output was written")
for path in outs:
    x = numpy.load(path)
    if not numpy.isfinite(x).all():
        sys.exit(f"demo: {path.name} holds non-finite values")
    print(f"  {path.name:<34} {str(x.shape):<12} {str(x.dtype):<8} "
          f"sum {float(x.astype(numpy.float64).sum()):.9g}")
PY
