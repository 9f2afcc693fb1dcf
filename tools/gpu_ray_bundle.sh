#!/usr/bin/env bash
# Build .ray_bundle/ in the repo root: Ray for the lent GPU machine (Python 3.12, no network),
# for running the cluster tuner there (bench/tune_gemm.py --cluster). Ray's wheel (~80 MB) does
# not fit beside .gpu/ in one device call (64 MiB), so this trims what tuning never imports
# (dashboard web client, Java jars, the Ray libraries: data, train, tune, serve, rllib, llm),
# strips the three native binaries' debug symbols and xz-compresses the rest (~25 MB).
# Use it in a second device call on the still-warm machine whose first call carried .gpu:
#   carry [".ray_bundle"], command: source .ray_bundle/setup.sh && ...
set -euo pipefail
RAY_VER="${RAY_VER:-2.60.0}"
ROOT="$(git rev-parse --show-toplevel)"
OUT="$ROOT/.ray_bundle"
grep -qx '/.ray_bundle/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.ray_bundle/' >> "$ROOT/.git/info/exclude"
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp
      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT/wheels"
python3 -m pip download -q --no-deps "${PLAT[@]}" -d "$tmp/w" "ray==$RAY_VER"
# Ray's requirements that the GPU image lacks
python3 -m pip download -q --no-deps "${PLAT[@]}" -d "$OUT/wheels" \
  jsonschema jsonschema-specifications referencing rpds-py
python3 -m zipfile -e "$tmp"/w/ray-*.whl "$tmp/site"
( cd "$tmp/site/ray" && rm -rf jars dashboard/client rllib serve data train tune llm )
strip --strip-unneeded "$tmp/site/ray/_raylet.so" "$tmp/site/ray/core/src/ray/gcs/gcs_server" \
  "$tmp/site/ray/core/src/ray/raylet/raylet"
tar -cf - -C "$tmp/site" . | xz -7 -T2 > "$OUT/ray_site.tar.xz"
cat > "$OUT/setup.sh" <<'SETUP'
# Sourced on the GPU machine after .gpu/setup.sh ran there (same warm machine).
if [ ! -d /tmp/raysite/ray ]; then
  mkdir -p /tmp/raysite && tar -xJf .ray_bundle/ray_site.tar.xz -C /tmp/raysite || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/raysite \
    .ray_bundle/wheels/*.whl || return 1
  # zipfile extraction drops the executable bits of Ray's two native servers
  find /tmp/raysite/ray/core/src -type f -exec chmod +x {} +
fi
unset CUDA_HOME CUDA_PATH
export PATH="/tmp/tc/bin:$PATH" PYTHONPATH="/tmp/site:/tmp/raysite:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -c "import ray, cuda.tile; print('ray', ray.__version__, 'cuda.tile', cuda.tile.__version__)"
SETUP
du -sh "$OUT"
