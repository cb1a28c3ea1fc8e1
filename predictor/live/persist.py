"""Save and load a fitted forecaster as one file (an adapter: it does file I/O).

Decides: the model file format. One `torch.save` archive holding
  metadata    JSON: format version, model name, bucket names, tick seconds,
              seasonal periods, training window (first tick, ticks, seconds),
              quantile levels, headstart version
  params      JSON: the constructor's hyper-parameters
  fitted      JSON: the fitted scalar attributes (names ending in `_`)
  arrays      fitted numpy arrays as tensors
  state_dict  the network's weights (Transformer only)
loaded back with `torch.load(weights_only=True)`, so a model file cannot run code.
Writes go to a temporary file renamed into place, so a crash never leaves half a file.

Errors: a model trained for another bucket list or tick -> ConfigError naming
both; a missing, corrupt or unreadable file -> ModelFileError, which the service
catches to fall back to the seasonal-naive baseline with a warning and a metric.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata as package_metadata
from inspect import signature
from pathlib import Path
from typing import Any

import numpy as np
import torch

from common.errors import ConfigError, HeadstartError
from predictor.models.forecast import Forecaster

# 2: forecasters keep `peak_grid_` (the quantiles of the most demand over the horizon).
FORMAT_VERSION = 2


class ModelFileError(HeadstartError):
    """A model file that is missing, corrupt or not a headstart model (names the file)."""


@dataclass(frozen=True)
class LoadedModel:
    """A fitted forecaster and the metadata it was saved with."""

    model: Forecaster
    metadata: dict[str, Any]


def _classes() -> dict[str, type]:
    from predictor.models.baselines import (
        AdaptiveLastValue,
        LastValue,
        SeasonalNaive,
        SeasonalWeekNaive,
    )
    from predictor.models.conditional import ConditionalIncrease
    from predictor.models.holt_winters import HoltWinters
    from predictor.models.transformer import TransformerForecaster

    return {cls.name: cls for cls in (LastValue, AdaptiveLastValue, SeasonalNaive,
                                      SeasonalWeekNaive, HoltWinters, TransformerForecaster,
                                      ConditionalIncrease)}


def _headstart_version() -> str:
    try:
        return package_metadata.version("headstart")
    except package_metadata.PackageNotFoundError:
        return "unknown"


def _params(model: Forecaster) -> dict[str, Any]:
    names = [n for n in signature(type(model).__init__).parameters if n != "self"]
    return {name: getattr(model, name) for name in names}


def save(model: Forecaster, path: str | Path, bucket_names: Sequence[str],
         tick_seconds: int) -> None:
    """Write a fitted `model` for `bucket_names` (its series, in order) to `path`."""
    if not hasattr(model, "n_series_"):
        raise ConfigError(f"cannot save {model.name}: it is not fitted")
    if len(bucket_names) != model.n_series_:
        raise ConfigError(f"cannot save {model.name}: fitted on {model.n_series_} series but "
                          f"given {len(bucket_names)} bucket names {list(bucket_names)}")
    fitted: dict[str, Any] = {}
    arrays: dict[str, torch.Tensor] = {}
    for name, value in vars(model).items():
        if not name.endswith("_") or name == "module_":
            continue
        if isinstance(value, np.ndarray):
            arrays[name] = torch.from_numpy(np.ascontiguousarray(value))
        else:
            fitted[name] = value.item() if isinstance(value, np.generic) else value
    periods = getattr(model, "periods_ticks", None) or (
        [model.period_ticks] if hasattr(model, "period_ticks") else [])
    first_tick = int(getattr(model, "fit_first_tick_", 0))
    n_ticks = int(getattr(model, "fit_n_ticks_", 0))
    meta = {
        "format_version": FORMAT_VERSION,
        "model": model.name,
        "bucket_names": list(bucket_names),
        "tick_seconds": int(tick_seconds),
        "periods_ticks": [int(p) for p in periods],
        "training_window": {"first_tick": first_tick, "ticks": n_ticks,
                            "start_s": first_tick * int(tick_seconds),
                            "end_s": (first_tick + n_ticks) * int(tick_seconds)},
        "quantile_levels": list(getattr(model, "levels_", ())) or "any (residual grid)",
        "headstart_version": _headstart_version(),
    }
    module = getattr(model, "module_", None)
    archive = {
        "metadata": json.dumps(meta),
        "params": json.dumps(_params(model)),
        "fitted": json.dumps(fitted),
        "arrays": arrays,
        "state_dict": {k: v.detach().cpu() for k, v in module.state_dict().items()}
        if module is not None else {},
    }
    target = Path(path)
    buffer = io.BytesIO()
    torch.save(archive, buffer)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent or ".", prefix=target.name,
                                             suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(buffer.getvalue())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _tuples(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def load(path: str | Path, bucket_names: Sequence[str] | None = None,
         tick_seconds: int | None = None) -> LoadedModel:
    """Read a model saved by `save`; refuse it for other buckets or another tick."""
    target = Path(path)
    try:
        archive = torch.load(target, map_location="cpu", weights_only=True)
        meta = json.loads(archive["metadata"])
        params = {k: _tuples(v) for k, v in json.loads(archive["params"]).items()}
        fitted = {k: _tuples(v) for k, v in json.loads(archive["fitted"]).items()}
        arrays = archive["arrays"]
        state_dict = archive["state_dict"]
    except FileNotFoundError:
        raise ModelFileError(f"{target}: model file does not exist") from None
    except Exception as error:  # any unreadable content is the same fault to the user
        raise ModelFileError(f"{target}: not a readable headstart model file "
                             f"({type(error).__name__}: {error})") from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(f"{target}: model format {meta.get('format_version')!r}, this "
                             f"headstart reads format {FORMAT_VERSION}; retrain the model")
    if bucket_names is not None and list(bucket_names) != meta["bucket_names"]:
        raise ConfigError(f"{target}: model was trained for buckets {meta['bucket_names']} "
                          f"but the configured buckets are {list(bucket_names)}; retrain it")
    if tick_seconds is not None and int(tick_seconds) != meta["tick_seconds"]:
        raise ConfigError(f"{target}: model was trained on {meta['tick_seconds']}-s ticks but "
                          f"the configured tick is {tick_seconds} s; retrain it")
    cls = _classes().get(meta["model"])
    if cls is None:
        raise ModelFileError(f"{target}: unknown model {meta['model']!r}")
    try:
        model = cls(**params)
        for name, value in fitted.items():
            setattr(model, name, value)
        for name, tensor in arrays.items():
            setattr(model, name, tensor.numpy().copy())
        if meta["model"] == "transformer":
            _restore_network(model, state_dict)
    except (TypeError, KeyError, RuntimeError, ValueError) as error:
        raise ModelFileError(f"{target}: model content does not match its metadata "
                             f"({type(error).__name__}: {error})") from None
    return LoadedModel(model=model, metadata=meta)


def _restore_network(model: Any, state_dict: dict[str, torch.Tensor]) -> None:
    from predictor.models.transformer import resolve_device

    saved_device = str(getattr(model, "device_", "cpu"))
    device = saved_device if saved_device == "cpu" or torch.cuda.is_available() else "cpu"
    if model.device is None:
        device = resolve_device(None)
    module = model.build_module(int(model.n_series_))
    module.load_state_dict(state_dict)
    model.module_ = module.to(device).eval()
    model.device_ = device
    model.levels_ = tuple(module.levels)
