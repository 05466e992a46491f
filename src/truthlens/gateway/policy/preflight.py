"""Offline validation of a config file, as ``truthlens check-config`` and start-up run it: the
schema (:func:`truthlens.gateway.policy.config.load_config`) and then the files the config names, each
failure a :class:`truthlens.options.ConfigError` naming its key (``detector.model``). Nothing is
loaded into memory beyond the model's manifest; no network is used.

Relative paths in a config are resolved from the folder of the config file, not from the
working directory (``detector.model: models/m`` next to ``/etc/truthlens/config.yaml`` is
``/etc/truthlens/models/m``)."""

from __future__ import annotations

import os

from truthlens.detector.manifest import ModelDirError, load_manifest, load_members, resolve_model_dir
from truthlens.gateway.policy.config import Config, load_config
from truthlens.options import ConfigError

MODEL_KEY = "detector.model"


def model_dir_error(exc: ModelDirError) -> ConfigError:
    """A model directory failure as the config error of the key that named the directory."""
    return ConfigError(MODEL_KEY, f"{exc} (a relative path is resolved from the config file's folder)")


def check_files(config: Config) -> None:
    """The files ``config`` names exist and are what they should be (raises ``ConfigError``)."""
    if config.detector.model_dir is None:  # builtin: inside the package
        return
    try:
        # An ensemble's members are checked too: a broken one would stop the process at start-up.
        load_members(load_manifest(resolve_model_dir(config.detector.model_dir)))
    except ModelDirError as exc:
        raise model_dir_error(exc) from None


def validate(path: str | os.PathLike[str]) -> Config:
    """``path`` parsed and its files checked; raises ``ConfigError`` naming the offending key."""
    config = load_config(path)
    check_files(config)
    return config
