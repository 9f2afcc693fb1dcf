"""The sanitizer: an emulator trace checked for memory bugs.

``checks.py`` runs the checks over a trace (``sanitize``, ``check_trace``), ``array_checks.py``
the per-array ones, and ``report.py`` holds what they find (plain records, JSON, text; the
HTML is ``render/sanitizer_view.py``'s).
"""

from .checks import check_trace, sanitize_kernel
from .report import Finding, SanitizerReport

__all__ = ["Finding", "SanitizerReport", "check_trace", "sanitize_kernel"]
