"""Launch one kernel once (for ncu): target.py vadd|gemm TM TN TK."""
import sys, time
t0 = time.perf_counter()
import cupy as cp
import cuda.tile as ct
sys.path.insert(0, "bench")
which = sys.argv[1]
stream = cp.cuda.get_current_stream()
if which == "vadd":
    from gpu_kernels import vector_add
    n = 1 << 24
    a = cp.ones(n, cp.float32); b = cp.ones(n, cp.float32); c = cp.zeros(n, cp.float32)
    ct.launch(stream, (n // 1024,), vector_add, (a, b, c, 1024))
else:
    from gemm_kernels import gemm_naive
    TM, TN, TK = map(int, sys.argv[2:5])
    N = 4096
    A = cp.ones((N, N), cp.float16); B = cp.ones((N, N), cp.float16); C = cp.zeros((N, N), cp.float16)
    import os
    if os.environ.get("STACK"): cp.cuda.runtime.deviceSetLimit(0, int(os.environ["STACK"]))
    ct.launch(stream, (N // TM, N // TN), gemm_naive, (A, B, C, TM, TN, TK))
stream.synchronize()
print(f"target {sys.argv[1:]} wall {time.perf_counter()-t0:.2f}s", flush=True)
