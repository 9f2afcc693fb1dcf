"""``tile_lab.examples``: the cuTile kernels the tutorials and benchmarks share.

Each module holds plain ``@ct.kernel`` functions a learner can read top to bottom, with a NumPy
reference beside the less obvious ones; nothing here compiles or launches at import.

* ``tile_lab.examples.gemm``: fp16 GEMMs: the tutorial's K-loop (``gemm_naive``), a grouped
  L2-friendly tile order with per-load latency hints (``gemm_grouped``) and a persistent grouped
  kernel (``gemm_persistent``); notebook 9 and ``bench/tune_gemm.py`` tune them.
* ``tile_lab.examples.attention``: flash attention forward with the online softmax
  (``flash_attention``) and its NumPy reference (``attention_reference``); notebook 15.
* ``tile_lab.examples.norms``: ``rms_norm`` and rotary position embedding (``rope``) with
  references; notebook 16.
* ``tile_lab.examples.puzzles`` / ``puzzle_solutions``: the Tile Puzzles' specs and checker
  (notebook 17) and, kept apart so the notebook does not give them away, their solutions.

    from tile_lab.examples.attention import flash_attention, attention_reference
"""
