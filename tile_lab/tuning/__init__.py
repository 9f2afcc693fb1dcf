"""Autotuning over kernel hints and tile-size constants (see ``tuner.tune``)."""

from .result import Failure, Success, TuningResult
from .space import Config, Space, SpaceError
from .store import TuningStore
from .tuner import TuneError, tune

__all__ = ["Config", "Failure", "Space", "SpaceError", "Success", "TuneError", "TuningResult",
           "TuningStore", "tune"]
