# Source on the lent GPU machine after the parts of tools/gpu_split_bundle.sh are unpacked into
# /tmp/tc: installs the carried wheels into /tmp/site (once) and points PATH/PYTHONPATH at them.
#   source tools/gpu_env.sh [wheel folders...]     e.g. source tools/gpu_env.sh .gpu_w .nbwheels
for d in "$@"; do
  [ -d "$d" ] && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    "$d"/*.whl 2>&1 | grep -v "WARNING: Target directory" || true
done
if [ -f .gpu_tools/tileirdisasm.xz ] && [ ! -x /tmp/tc/bin/tileirdisasm ]; then
  xz -dc .gpu_tools/tileirdisasm.xz > /tmp/tc/bin/tileirdisasm && chmod +x /tmp/tc/bin/tileirdisasm
fi
unset CUDA_HOME CUDA_PATH  # an older toolkit there makes tileiras fail
export PATH=/tmp/tc/bin:$PATH PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
