"""Autotuning over kernel hints and tile-size constants (see ``tuner.tune``)."""

from .measurer import (
    FunctionMeasurer,
    GpuMeasurer,
    Measurer,
    MeasureRequest,
    failure_stage,
    measure_config,
)
from .options import RaceOptions, TuneError, TuneOptions
from .result import Failure, Success, TuningResult
from .schedules import Schedules
from .space import Config, Space, SpaceError
from .store import ReadOnlyStoreError, TuningStore
from .strategies import (
    BaseStrategy,
    Strategy,
    Trials,
    register_strategy,
    strategy_names,
    unregister_strategy,
)
from .tuner import tune

__all__ = ["BaseStrategy", "Config", "Failure", "FunctionMeasurer", "GpuMeasurer",
           "MeasureRequest", "Measurer", "RaceOptions", "ReadOnlyStoreError", "Schedules", "Space",
           "SpaceError", "Strategy", "Success", "Trials", "TuneError", "TuneOptions",
           "TuningResult", "TuningStore", "failure_stage", "measure_config", "register_strategy",
           "strategy_names", "tune", "unregister_strategy"]
