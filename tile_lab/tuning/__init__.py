"""Autotuning over kernel hints and tile-size constants (see ``tuner.tune``)."""

from .measurer import FunctionMeasurer, GpuMeasurer, Measurer, MeasureRequest, failure_stage
from .options import RaceOptions, TuneError, TuneOptions
from .result import Failure, Success, TuningResult
from .space import Config, Space, SpaceError
from .store import TuningStore
from .tuner import measure_config, tune

__all__ = ["Config", "Failure", "FunctionMeasurer", "GpuMeasurer", "MeasureRequest", "Measurer",
           "RaceOptions", "Space", "SpaceError", "Success", "TuneError", "TuneOptions",
           "TuningResult", "TuningStore", "failure_stage", "measure_config", "tune"]
