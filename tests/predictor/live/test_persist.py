"""Model files: round trip through real files, refusals, corrupt files."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from common.errors import ConfigError
from predictor.live.persist import ModelFileError, load, save
from tests.predictor.models.test_forecasters import MODELS, make_history, make_model

BUCKETS = ["g4dn.xlarge", "p4d.24xlarge"]


@pytest.mark.parametrize("key", list(MODELS), ids=list(MODELS))
def test_round_trip_gives_the_same_forecast(tmp_path, key):
    history = make_history(n_ticks=120)
    model = make_model(key).fit(history, first_tick=1000)
    path = tmp_path / "model.pt"
    save(model, path, BUCKETS, tick_seconds=300)
    loaded = load(path, bucket_names=BUCKETS, tick_seconds=300)
    before = model.predict(history, 3, quantiles=(0.5, 0.9), first_tick=1000)
    after = loaded.model.predict(history, 3, quantiles=(0.5, 0.9), first_tick=1000)
    np.testing.assert_array_equal(after.point, before.point)
    np.testing.assert_array_equal(after.at(0.9), before.at(0.9))
    meta = loaded.metadata
    assert meta["model"] == model.name
    assert meta["bucket_names"] == BUCKETS
    assert meta["tick_seconds"] == 300
    # training window: ticks 1000..1119 -> seconds 300000..336000
    assert meta["training_window"] == {"first_tick": 1000, "ticks": 120,
                                       "start_s": 300_000, "end_s": 336_000}
    assert meta["headstart_version"]


def test_transformer_metadata_lists_periods_and_levels(tmp_path):
    model = make_model("transformer").fit(make_history())
    save(model, tmp_path / "m.pt", BUCKETS, tick_seconds=300)
    meta = load(tmp_path / "m.pt").metadata
    assert meta["periods_ticks"] == [24, 48]
    assert meta["quantile_levels"] == [0.1, 0.5, 0.8, 0.9, 0.95, 0.99]


def test_other_buckets_are_refused_naming_both_lists(tmp_path):
    save(make_model("last").fit(make_history()), tmp_path / "m.pt", BUCKETS, 300)
    with pytest.raises(ConfigError) as caught:
        load(tmp_path / "m.pt", bucket_names=["g4dn.xlarge", "g5.xlarge"])
    assert "['g4dn.xlarge', 'p4d.24xlarge']" in str(caught.value)
    assert "['g4dn.xlarge', 'g5.xlarge']" in str(caught.value)
    with pytest.raises(ConfigError, match="300-s ticks"):
        load(tmp_path / "m.pt", tick_seconds=60)


@pytest.mark.parametrize(
    "content",
    [b"", b"not a model at all", b"PK\x03\x04 truncated zip"],
    ids=["empty", "text", "truncated-zip"],
)
def test_corrupt_file_is_a_model_file_error(tmp_path, content):
    path = tmp_path / "m.pt"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match="not a readable headstart model"):
        load(path)


def test_missing_file_and_wrong_content(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        load(tmp_path / "absent.pt")
    path = tmp_path / "m.pt"
    save(make_model("last").fit(make_history()), path, BUCKETS, 300)
    archive = torch.load(path, weights_only=True)
    archive["params"] = json.dumps({"no_such_param": 1})
    torch.save(archive, path)
    with pytest.raises(ModelFileError, match="does not match"):
        load(path)


def test_save_refuses_unfitted_or_mismatched(tmp_path):
    with pytest.raises(ConfigError, match="not fitted"):
        save(make_model("last"), tmp_path / "m.pt", BUCKETS, 300)
    with pytest.raises(ConfigError, match="2 series"):
        save(make_model("last").fit(make_history()), tmp_path / "m.pt", ["one"], 300)
    assert list(tmp_path.iterdir()) == []
