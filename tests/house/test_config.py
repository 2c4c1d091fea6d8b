"""bigkern.config: settings in dask.config, and typos refused by name."""

from __future__ import annotations

from pathlib import Path

import dask.config
import pytest
import yaml

import bigkern
from bigkern import config
from bigkern.errors import BigkernError, UnknownSettingError

YAML = Path(bigkern.__file__).with_name("bigkern.yaml")


def test_known_settings_are_the_keys_of_the_yaml_file() -> None:
    defaults = yaml.safe_load(YAML.read_text())["bigkern"]
    assert config.known_settings() == tuple(sorted(defaults))
    with config.set(**{k: config.get(k) for k in defaults}):  # every one of them is accepted
        pass


def test_set_and_get_as_a_context_manager() -> None:
    before = config.get("split_every")
    with config.set(split_every=before + 3):
        assert config.get("split_every") == before + 3
        assert dask.config.get("bigkern.split_every") == before + 3
    assert config.get("split_every") == before


def test_set_globally_until_undone() -> None:
    before = config.get("kernel_block_rows")
    setting = config.set(kernel_block_rows=17)
    try:
        assert config.get("kernel_block_rows") == 17
    finally:
        setting.__exit__(None, None, None)
    assert config.get("kernel_block_rows") == before


def test_a_typo_names_the_setting_meant() -> None:
    with pytest.raises(KeyError) as info:
        config.set(split_evry=4)
    message = str(info.value)
    assert message == "unknown bigkern setting 'split_evry'; did you mean 'split_every'?"
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, BigkernError)
    assert isinstance(info.value, UnknownSettingError)


def test_several_close_names_are_all_offered() -> None:
    with pytest.raises(ValueError) as info:
        config.set(max_bytes=10)
    assert str(info.value).endswith("did you mean 'max_band_bytes' or 'chunk_bytes'?")


def test_a_name_like_no_setting_lists_them_all() -> None:
    with pytest.raises(UnknownSettingError) as info:
        config.set(xyzzy=1)
    known = ", ".join(config.known_settings())
    assert str(info.value) == f"unknown bigkern setting 'xyzzy'; known settings: {known}"


def test_nothing_is_set_when_one_name_is_unknown() -> None:
    before = config.get("split_every")
    with pytest.raises(UnknownSettingError, match="progres"):
        config.set(split_every=before + 1, progres=False)
    assert config.get("split_every") == before


def test_keys_below_a_mapping_setting() -> None:
    ranges = dict(config.get("valid_ranges"))
    with config.set(**{"valid_ranges.CORR": [-1.0, 0.0]}):
        assert config.get("valid_ranges.CORR") == [-1.0, 0.0]
        assert config.get("valid_ranges.NDAI") == ranges["NDAI"]  # the others are kept
    with config.set(**{"fill_values.NDAI": [-9999.0]}):  # an empty mapping by default
        assert config.get("fill_values") == {"NDAI": [-9999.0]}
    assert config.get("valid_ranges") == ranges


def test_keys_below_a_single_value_or_a_misspelt_mapping() -> None:
    with pytest.raises(UnknownSettingError, match=r"'split_every\.x': 'split_every' is a single"):
        config.set(**{"split_every.x": 1})
    with pytest.raises(UnknownSettingError, match="'valid_range'; did you mean 'valid_ranges'"):
        config.set(**{"valid_range.CORR": [-1.0, 0.0]})


def test_hyphens_are_underscores_as_in_dask() -> None:
    with config.set(**{"split-every": 5}):
        assert config.get("split_every") == 5


def test_dask_config_set_is_not_checked() -> None:
    """Documented: a key set through dask.config directly cannot be intercepted."""
    with dask.config.set({"bigkern.split_evry": 4}):
        assert config.get("split_evry") == 4
    assert "dask.config.set" in config.__doc__ and "not* checked" in config.__doc__
