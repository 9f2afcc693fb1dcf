"""An ipywidgets browser for tile-space diagrams: pick a block, a loop iteration, source
lines, an array and a view; the diagram redraws below.

The trace is indexed once (by block, by array) when the browser is built, so a redraw
only touches the selected block's accesses. The all-blocks views (coverage, order) compute
their heatmaps / tile visits, vectorised, on the first switch to them and reuse them after;
every redraw, first switches included, stays under the 0.3 s budget for traces of 10^5
memory operations (``bench/diagram_redraw.py`` measures it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import ipywidgets as widgets

from ..analysis.tma import TmaReport
from ..errors import TileLabError
from ..render.diagram import Diagram, diagram
from ..render.diagram_legend import ellipsize
from ..render.widget_html import error_html, static_browser_html
from ..tracing.index import IndexedTrace
from ..tracing.trace import Trace, load_trace

__all__ = ["DiagramBrowser", "browse"]

_AXES = "xyz"
ALL = -1  # the "all iterations" stop of the iteration slider (ipywidgets rejects None)


class DiagramBrowser(widgets.VBox):
    """Controls + the diagram. ``browser.diagram`` is the diagram currently shown;
    ``browser.error`` the error of the last redraw, if it failed (also shown in the widget)."""

    def __init__(self, trace: Trace | IndexedTrace, *, view: str = "block",
                 block: Sequence[int] | None = None, arg: str | None = None,
                 tma: TmaReport | None = None) -> None:
        self.index = trace if isinstance(trace, IndexedTrace) else IndexedTrace(trace)
        self.tma = tma  # TMA verdicts marked in the legend (render/tma.py), if given
        t = self.index.trace
        self.diagram: Diagram | None = None
        self.error: TileLabError | None = None

        # one slider per grid axis that has more than one block (always at least x)
        start = (*(block or ()), 0, 0, 0)
        self.block_sliders: dict[str, widgets.IntSlider] = {}
        for i, (axis, size) in enumerate(zip(_AXES, t.grid)):
            if size > 1 or i == 0:
                self.block_sliders[axis] = widgets.IntSlider(
                    value=start[i], min=0, max=max(size - 1, 0), description=f"block {axis}",
                    continuous_update=False)
        self.iteration = widgets.SelectionSlider(
            options=[("all", ALL)] + [(str(i), i) for i in range(self.index.max_iteration + 1)],
            value=ALL, description="iteration", continuous_update=False)
        self.lines = widgets.SelectMultiple(
            options=[(f"line {ln}: {ellipsize(self.index.line_text(ln), 60)}", ln)
                     for ln in self.index.lines],
            value=self.index.lines, description="lines", rows=min(6, max(2, len(self.index.lines))),
            layout=widgets.Layout(width="auto"))
        self.array = widgets.Dropdown(options=[("all arrays", "")] + [
            (a.name, a.name) for a in t.arrays], value=arg or "", description="array")
        views = ["block", "coverage", "order"]
        if self.index.gemm_roles() is not None:
            views.append("gemm")
        if view not in views:
            raise TileLabError(f"view={view!r}: this trace offers the views {views}")
        self.view = widgets.ToggleButtons(options=views, value=view, description="view")
        self.status = widgets.HTML()
        self.output = widgets.HTML()

        controls = [*self.block_sliders.values(), self.iteration, self.lines, self.array,
                    self.view]
        for w in controls:
            w.observe(self._on_change, names="value")
        super().__init__([
            widgets.HBox([widgets.VBox([*self.block_sliders.values(), self.iteration]),
                          widgets.VBox([self.array, self.lines])]),
            self.view, self.status, self.output])
        self.redraw()

    def _repr_mimebundle_(self, **kwargs) -> dict:
        # the widget view needs a kernel (or saved widget state and the widget scripts from
        # the web): nbconvert's HTML and notebook viewers fall back to this picture
        data = super()._repr_mimebundle_(**kwargs)
        if self.diagram is not None:
            block = "all blocks" if self.view.value == "coverage" else \
                f"block {tuple(self.block[:len(self.block_sliders)])}"
            data["text/html"] = static_browser_html(
                f"view {self.view.value}, {block}", self.diagram._repr_html_())
        return data

    @property
    def block(self) -> tuple[int, int, int]:
        ids = {axis: s.value for axis, s in self.block_sliders.items()}
        return tuple(ids.get(axis, 0) for axis in _AXES)  # type: ignore[return-value]

    def _on_change(self, change: dict) -> None:
        self.redraw()

    def redraw(self) -> Diagram | None:
        """Draw the current selection into the output (and return it)."""
        view = self.view.value
        block_view = view in ("block", "gemm")
        for s in self.block_sliders.values():
            s.disabled = view == "coverage"
        self.iteration.disabled = self.lines.disabled = not block_view
        chosen = tuple(self.lines.value)
        line = None if set(chosen) == set(self.index.lines) else chosen
        try:
            it = self.iteration.value
            d = diagram(self.index, arg=self.array.value or None,
                        block=None if view == "coverage" else self.block,
                        iteration=None if it == ALL or not block_view else it,
                        line=line if block_view else None, view=view, tma=self.tma)
        except TileLabError as e:
            # an observer's exception would vanish into the widget log: show it instead
            self.error = e
            self.status.value = error_html(e.render())
            return None
        self.error = None
        self.status.value = ""
        self.diagram = d
        self.output.value = d._repr_html_()
        return d


def browse(trace: Trace | IndexedTrace | str | os.PathLike, **kwargs) -> DiagramBrowser:
    """A :class:`DiagramBrowser` for ``trace`` (display it as a cell's last expression).

    ``trace`` may be the path of a trace saved with ``Trace.save``: it is read with
    ``tile_lab.load_trace`` (checked; a bad file raises FileFormatError)."""
    if isinstance(trace, (str, os.PathLike)):
        trace = load_trace(trace)
    return DiagramBrowser(trace, **kwargs)
