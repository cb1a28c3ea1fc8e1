"""Every component reports a malformed or unreadable YAML file on one line, with where."""

from __future__ import annotations

import pytest

from bucketing.bucket_file import read_bucket_file
from bucketing.catalog import load_catalog
from common.errors import ConfigError
from extender.config import load_config as load_extender_config
from overprovisioner.config.load import load_config as load_overprovisioner_config

LOADERS = [load_catalog, load_extender_config, load_overprovisioner_config, read_bucket_file]
IDS = ["catalog", "extender-config", "overprovisioner-config", "bucket-file"]


@pytest.mark.parametrize("load", LOADERS, ids=IDS)
def test_malformed_yaml_is_one_line_naming_file_line_and_column(tmp_path, load):
    path = tmp_path / "bad.yaml"
    path.write_text("port: [1\nx: 2\n")  # the flow list is never closed: fails at "x:"
    with pytest.raises(ConfigError) as raised:
        load(path)
    message = str(raised.value)
    assert "\n" not in message
    assert f"{path}: not valid YAML at line 2, column 2" in message


@pytest.mark.parametrize("load", LOADERS, ids=IDS)
def test_missing_file_names_it(tmp_path, load):
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match="absent.yaml"):
        load(path)
