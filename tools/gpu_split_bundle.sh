#!/usr/bin/env bash
# Split the GPU bundle (.gpu/, from ../shared/gpu/bundle.sh) into parts that each fit one device
# call beside the repository (64 MiB per call): .gpu_tc1 (tileiras), .gpu_tc2 (ptxas + libnvvm),
# .gpu_w (the wheels). Send them in consecutive calls to the same warm machine (it stays warm
# 30 s after a call), unpacking each:
#   call 1, carry [".gpu_tc1"]: mkdir -p /tmp/tc && xz -dc .gpu_tc1/part.tar.xz | tar -xf - -C /tmp/tc
#   call 2, carry [".gpu_tc2", ".gpu_w"]: xz -dc .gpu_tc2/part.tar.xz | tar -xf - -C /tmp/tc &&
#     python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu_w/*.whl &&
#     unset CUDA_HOME CUDA_PATH && export PATH=/tmp/tc/bin:$PATH PYTHONPATH=/tmp/site:$PWD && ...
# With --cpp, also .gpu_tc3: the pip nvcc that compiles CUDA Tile C++ (nvcc, cicc, headers; the
# GPU image's own nvcc 13.0 predates CUDA Tile C++), taken from this venv's nvidia-cuda-nvcc
# wheel; unpack it into /tmp/tc the same way in its own call.
set -euo pipefail
ROOT="$(git rev-parse --show-toplevel)"
cd "$ROOT"
[ -f .gpu/toolchain.tar.xz ] || { echo "run bash ../shared/gpu/bundle.sh first" >&2; exit 1; }
CPP=0; [ "${1:-}" = "--cpp" ] && CPP=1
for d in .gpu_tc1 .gpu_tc2 .gpu_w $([ $CPP = 1 ] && echo .gpu_tc3); do
  grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude
  rm -rf "$d"; mkdir -p "$d"
done
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
xz -dc .gpu/toolchain.tar.xz | tar -xf - -C "$tmp"
tar -cf - -C "$tmp" bin/tileiras | xz -9 -T2 > .gpu_tc1/part.tar.xz
tar -cf - -C "$tmp" bin/ptxas lib/libnvvm.so.4 | xz -9 -T2 > .gpu_tc2/part.tar.xz
cp .gpu/wheels/*.whl .gpu_w/
# IPython and friends (tile_lab.errors imports IPython): EXTRA_WHEELS="ipython ipywidgets ..." of
# bundle.sh, kept in .gpu_extra
[ -d .gpu_extra ] && cp .gpu_extra/*.whl .gpu_w/
if [ $CPP = 1 ]; then
  cu13="$(python -c 'import nvidia.cu13, os; print(list(nvidia.cu13.__path__)[0])')"
  tar -cf - -C "$cu13" bin/nvcc bin/nvcc.profile nvvm/bin/cicc include | xz -6 -T2 > .gpu_tc3/part.tar.xz
  du -sh .gpu_tc3
fi
du -sh .gpu_tc1 .gpu_tc2 .gpu_w
