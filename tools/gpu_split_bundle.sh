#!/usr/bin/env bash
# Split the GPU bundle (.gpu/, from ../shared/gpu/bundle.sh) into parts that each fit one device
# call beside the repository (64 MiB per call): .gpu_tc1 (tileiras), .gpu_tc2 (ptxas + libnvvm),
# .gpu_w (the wheels). Send them in consecutive calls to the same warm machine (it stays warm
# 30 s after a call), unpacking each:
#   call 1, carry [".gpu_tc1"]: mkdir -p /tmp/tc && xz -dc .gpu_tc1/part.tar.xz | tar -xf - -C /tmp/tc
#   call 2, carry [".gpu_tc2", ".gpu_w"]: xz -dc .gpu_tc2/part.tar.xz | tar -xf - -C /tmp/tc &&
#     python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu_w/*.whl &&
#     unset CUDA_HOME CUDA_PATH && export PATH=/tmp/tc/bin:$PATH PYTHONPATH=/tmp/site:$PWD && ...
set -euo pipefail
ROOT="$(git rev-parse --show-toplevel)"
cd "$ROOT"
[ -f .gpu/toolchain.tar.xz ] || { echo "run bash ../shared/gpu/bundle.sh first" >&2; exit 1; }
for d in .gpu_tc1 .gpu_tc2 .gpu_w; do
  grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude
  rm -rf "$d"; mkdir -p "$d"
done
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
xz -dc .gpu/toolchain.tar.xz | tar -xf - -C "$tmp"
tar -cf - -C "$tmp" bin/tileiras | xz -9 -T2 > .gpu_tc1/part.tar.xz
tar -cf - -C "$tmp" bin/ptxas lib/libnvvm.so.4 | xz -9 -T2 > .gpu_tc2/part.tar.xz
cp .gpu/wheels/*.whl .gpu_w/
du -sh .gpu_tc1 .gpu_tc2 .gpu_w
