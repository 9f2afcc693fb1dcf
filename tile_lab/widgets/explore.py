"""``tile_lab.explore``: one slider per knob; moving one re-runs the kernel at that config.

With a GPU the config is compiled (cached), launched and measured, and the plot of the current knob
is redrawn; without one the sliders still drive the CPU emulator and the partition diagram, and the
performance pane shows recorded results (a TuningStore file) for the selected config. A "sweep"
button runs ``tile_lab.tune`` with its progress bar (``tile_lab.progress``, shown in the widget's
output area); "apply best" binds the tuned kernel in the user namespace and prints the code that
reproduces it. Measuring goes through the tuner's public
:class:`~tile_lab.tuning.measurer.Measurer` seam, in the burst regime by default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..render import widget_html
from ..tuning.measurer import GpuMeasurer, Measurer, MeasureRequest, as_measurer
from ..tuning.options import TuneOptions
from ..tuning.result import Failure, Success, TuningResult
from ..tuning.space import Config, Space, config_from_mapping
from ..tuning.store import TuningStore, config_key, recorded_measurement
from ..tuning.tuner import kernel_display_name, measure_config

ConfigFn = Callable[[Config], Sequence[Any]]


@dataclass(frozen=True)
class ExploreOptions:
    """``use_gpu``: measure on the GPU (default: when one is present; else the sliders drive
    the emulator and recorded results). ``metric``: "time", "gbps" or "tflops" for the bars.
    ``name``: the kernel's name in titles and the store. ``timing``: a
    :class:`~tile_lab.gpu.options.TimingOptions` for GPU measurements (default: cold, burst)."""

    use_gpu: bool | None = None
    metric: str = "time"
    name: str | None = None
    timing: Any = None


class Explorer:
    """The widget and its state; ``.widget`` is the ipywidgets box (also shown by display)."""

    def __init__(self, kernel: Any, space: Space, grid_fn: ConfigFn, args_fn: ConfigFn, *,
                 diagram_args_fn: ConfigFn | None = None, diagram_grid_fn: ConfigFn | None = None,
                 check: Callable[..., Any] | None = None, store: TuningStore | str | None = None,
                 measure: Measurer | Callable[..., Any] | None = None,
                 options: ExploreOptions | None = None) -> None:
        import ipywidgets as w

        opts = options or ExploreOptions()
        use_gpu, metric, name = opts.use_gpu, opts.metric, opts.name
        self.timing = opts.timing

        self.kernel, self.space = kernel, space
        self.grid_fn, self.args_fn = grid_fn, args_fn
        self.diagram_args_fn = diagram_args_fn or args_fn
        self.diagram_grid_fn = diagram_grid_fn
        self.check, self.metric = check, metric
        self.store = TuningStore(store) if isinstance(store, str) else store
        self.kinds = space.classify(kernel)
        self.use_gpu = _gpu_present() if use_gpu is None else use_gpu
        self._measure = as_measurer(measure)
        self._gpu_measure: Measurer | None = None  # made on the first GPU redraw
        # per-config results of work a redraw would otherwise repeat: a config's diagram never
        # changes, and the store is read once (again after a sweep appended to it)
        self._diagrams: dict[str, str] = {}
        self._records: list[Any] | None = None
        self.name = name or _kernel_name(kernel)
        self.measured: dict[str, Success | Failure] = {}
        self.result: TuningResult | None = None
        self.redraws = 0  # count of completed redraws (tests and the UI both read it)

        self.sliders: dict[str, Any] = {}
        for knob, values in space.knobs.items():
            if set(values) <= {True, False, None} and len(values) <= 3:
                ctl = w.ToggleButtons(options=list(values), description=knob)
            else:
                ctl = w.SelectionSlider(options=list(values), description=knob,
                                        continuous_update=False)
            ctl.observe(self._on_change, names="value")
            self.sliders[knob] = ctl
        self.status = w.HTML()
        # An HTML pane holding the chart's SVG: no output capture, which depends on a live
        # widget front end, and deterministic bytes.
        self.perf = w.HTML()
        self.diagram = w.HTML()
        # where the sweep's progress bar (tqdm.auto, through tile_lab.progress) is drawn
        self.sweep_output = w.Output()
        self.sweep_button = w.Button(description="sweep", icon="play")
        self.apply_button = w.Button(description="apply best", icon="check")
        self.sweep_button.on_click(lambda _: self._sweep_clicked())
        self.apply_button.on_click(lambda _: self.apply_best())
        mode = ("GPU" if self.use_gpu
                else "CPU emulator (no GPU: performance shows recorded results)")
        header = w.HTML(widget_html.header_html(self.name, mode))
        controls = w.VBox([header, *self.sliders.values(),
                           w.HBox([self.sweep_button, self.apply_button]),
                           self.sweep_output, self.status])
        # wraps: below ~1400 px the diagram goes under the chart instead of shrinking to fit
        self.widget = w.VBox([controls, w.HBox([self.perf, self.diagram],
                                               layout=w.Layout(flex_flow="row wrap"))])
        self.redraw()

    # ---- state ------------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        return config_from_mapping(self.space, {k: s.value for k, s in self.sliders.items()})

    def set(self, **values: Any) -> None:
        """Move sliders programmatically (one redraw at the end)."""
        for k, v in values.items():
            self.sliders[k].unobserve(self._on_change, names="value")
            try:
                self.sliders[k].value = v
            finally:
                self.sliders[k].observe(self._on_change, names="value")
        self.redraw()

    def _on_change(self, change: dict[str, Any]) -> None:
        self._last_knob = getattr(change.get("owner"), "description", None)
        self.redraw()

    # ---- one redraw: run at the current config, update the panes ----------------------------
    def redraw(self) -> None:
        cfg = self.config
        valid = {config_key(c) for c in self.space.configs(None)}
        if config_key(cfg) not in valid:
            self.status.value = widget_html.rejected_html(cfg.label())
            self.redraws += 1
            return
        outcome = self._outcome(cfg)
        self.status.value = widget_html.status_html(cfg, outcome, recorded=not self.use_gpu)
        self._draw_perf(cfg)
        self._draw_diagram(cfg)
        self.redraws += 1

    def _outcome(self, cfg: Config) -> Success | Failure | None:
        key = config_key(cfg)
        if key in self.measured:
            return self.measured[key]
        if self.use_gpu or self._measure is not None:
            measurer = self._measure
            if measurer is None:
                if self._gpu_measure is None:
                    self._gpu_measure = GpuMeasurer(timing=self.timing, check=self.check)
                measurer = self._gpu_measure
            # a slider move must redraw within REDRAW_BUDGET_S: a config slower than its
            # share of the budget per launch is timed once (its note says so)
            out = measure_config(measurer, self.kernel, cfg, self.kinds, self.grid_fn,
                                 self.args_fn, MeasureRequest(
                                     self.SAMPLES, self.REDRAW_BUDGET_S / self.SAMPLES))
            self.measured[key] = out
            return out
        return self._recorded(cfg)

    def _recorded(self, cfg: Config) -> Success | Failure | None:
        if self.store is None:
            return None
        for rec in self._store_records():
            if config_key(rec.config) == config_key(cfg) and rec.context.get("kernel") == self.name:
                if rec.status == "ok" and rec.measurement is not None:
                    return Success(cfg, recorded_measurement(rec.measurement),
                                   from_store=True)
                return Failure(cfg, rec.stage or "launch", rec.error or "", from_store=True)
        return None

    def _store_records(self) -> list[Any]:
        if self._records is None:
            self._records = list(self.store.records()) if self.store is not None else []
        return self._records

    def _draw_perf(self, cfg: Config) -> None:
        # the knob just moved, every other knob where the sliders are: the current config's
        # bar is highlighted (an SVG drawn directly: milliseconds, where matplotlib takes
        # hundreds of them per redraw)
        from ..render.tune_plots import knob_bars_svg

        result = self._known_result()
        if result is None or result.best is None:
            self.perf.value = ""
            return
        changed = self._last_knob or next(iter(self.space.knobs))
        self.perf.value = knob_bars_svg(result, changed, self.metric, around=cfg)

    _last_knob: str | None = None

    def _known_result(self) -> TuningResult | None:
        succ = [o for o in self.measured.values() if isinstance(o, Success)]
        if not succ and self.store is not None and not self.use_gpu:
            for rec in self._store_records():
                if rec.status == "ok" and rec.context.get("kernel") == self.name:
                    succ.append(Success(rec.config, recorded_measurement(rec.measurement),
                                        from_store=True))
        if self.result is not None:
            succ = list(self.result.successes) + succ
        if not succ:
            return None
        return TuningResult(self.name, tuple(succ), ())

    SAMPLES = 20  # cold samples per config a slider move measures
    REDRAW_BUDGET_S = 0.15  # GPU time a slider move may spend timing one config

    # Emulating a GPU-sized problem for a picture would take minutes: above this many array
    # elements the diagram needs a small problem from ``diagram_args_fn``.
    DIAGRAM_MAX_ELEMENTS = 1 << 22

    def _draw_diagram(self, cfg: Config) -> None:
        key = config_key(cfg)
        if key not in self._diagrams:
            self._diagrams[key] = self._diagram_html(cfg)
        self.diagram.value = self._diagrams[key]

    def _diagram_html(self, cfg: Config) -> str:
        try:
            from ..emulator.runtime import trace_kernel as emulate_trace
            from ..render.diagram import diagram

            grid = tuple(int(g) for g in self.grid_fn(cfg))
            args = tuple(self.diagram_args_fn(cfg))
            size = sum(int(getattr(a, "size", 0)) for a in args if hasattr(a, "shape"))
            if size > self.DIAGRAM_MAX_ELEMENTS:
                return widget_html.diagram_skipped_html(size)
            if self.diagram_grid_fn is not None:
                grid = tuple(int(g) for g in self.diagram_grid_fn(cfg))
            trace = emulate_trace(self.kernel, grid, args)
            return diagram(trace)._repr_html_()
        except Exception as e:  # the diagram is an aid: show why it is missing, keep the widget
            return widget_html.error_html(f"diagram unavailable: {type(e).__name__}: {e}")

    # ---- buttons ------------------------------------------------------------------------------
    def sweep(self, options: TuneOptions | None = None) -> TuningResult:
        """Tune over the whole space (``options``: a TuneOptions; default: race, burst regime,
        the explorer's timing) and move the sliders to the best config. Results are appended to
        the explorer's store unless it is a read-only (``.gz``) one."""
        from ..tuning import tune

        opts = options or TuneOptions()
        if self.timing is not None and options is None:
            opts = replace(opts, timing=self.timing)
        # a read-only (compressed) store is shown, not recorded into: the sweep measures afresh
        store = None if self.store is not None and self.store.read_only else self.store
        result = tune(self.kernel, self.space, self.grid_fn, self.args_fn, check=self.check,
                      store=store, measure=self._measure, options=opts)
        self.result = result
        self._records = None  # the sweep appended to the store
        self.swept = len(result.successes) + len(result.failures)
        best = result.best
        if best is not None:
            self.set(**best.config.as_dict())
        return result

    swept = 0  # configs the last sweep measured or found failed

    def _sweep_clicked(self) -> None:
        self.sweep_output.clear_output()
        with self.sweep_output:  # the tqdm.auto bar draws here
            self.sweep()

    def apply_best(self, namespace: dict[str, Any] | None = None) -> str:
        """Bind ``<name>_tuned`` (hints applied) and the best constants; return the snippet."""
        result = self.result or self._known_result()
        if result is None or result.best is None:
            raise RuntimeError("no measured config yet: move a slider or press sweep first")
        best = result.best.config
        hints = {k: v for k, v in best.items if self.kinds.get(k) == "hint"}
        consts = {k: v for k, v in best.items if self.kinds.get(k) == "constant"}
        tuned = self.kernel.replace_hints(**hints) if hints else self.kernel
        if namespace is None:
            namespace = _user_namespace()
        namespace[f"{self.name}_tuned"] = tuned
        namespace[f"{self.name}_best"] = consts
        hint_txt = ", ".join(f"{k}={v!r}" for k, v in hints.items())
        snippet = (f"{self.name}_tuned = {self.name}.replace_hints({hint_txt})\n"
                   f"{self.name}_best = {consts!r}  # pass these Constant values in the args")
        print(snippet)
        return snippet

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def explore(kernel: Any, space: Space, grid_fn: ConfigFn, args_fn: ConfigFn, *,
            diagram_args_fn: ConfigFn | None = None, diagram_grid_fn: ConfigFn | None = None,
            check: Callable[..., Any] | None = None, store: TuningStore | str | None = None,
            measure: Measurer | Callable[..., Any] | None = None,
            options: ExploreOptions | None = None) -> Explorer:
    """Interactive sliders over ``space`` (see :class:`Explorer`; ``diagram_args_fn`` /
    ``diagram_grid_fn`` give a small problem for the partition diagram)."""
    return Explorer(kernel, space, grid_fn, args_fn, diagram_args_fn=diagram_args_fn,
                    diagram_grid_fn=diagram_grid_fn, check=check, store=store, measure=measure,
                    options=options)


def _gpu_present() -> bool:
    try:
        from ..gpu.device import gpu_available

        return bool(gpu_available())
    except Exception:
        return False


def _kernel_name(kernel: Any) -> str:
    return kernel_display_name(kernel)


def _user_namespace() -> dict[str, Any]:
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:
        raise RuntimeError("apply_best() outside IPython needs namespace=")
    return ip.user_ns

