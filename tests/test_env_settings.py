"""The one rule by which every MEMHUB_* number and flag is read (memhub/env_settings.py)."""

from __future__ import annotations

import pytest

from memhub.env_settings import env_flag, env_float, env_int
from memhub.errors import StartupError


def test_unset_or_blank_keeps_the_default_and_values_are_trimmed() -> None:
    assert env_int({}, "MEMHUB_X", 7, 0, 10) == 7
    assert env_int({"MEMHUB_X": "  "}, "MEMHUB_X", 7, 0, 10) == 7
    assert env_int({"MEMHUB_X": " 3 "}, "MEMHUB_X", 7, 0, 10) == 3
    assert env_float({"MEMHUB_X": "0.25"}, "MEMHUB_X", 1.0, 0.0, 1.0) == 0.25
    assert env_flag({"MEMHUB_X": " Off "}, "MEMHUB_X", True) is False
    assert env_flag({"MEMHUB_X": "YES"}, "MEMHUB_X", False) is True
    assert env_flag({}, "MEMHUB_X", True) is True


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: env_int({"MEMHUB_X": "2.5"}, "MEMHUB_X", 1, 0, 10), "MEMHUB_X='2.5' is not a whole number"),
        (lambda: env_int({"MEMHUB_X": "11"}, "MEMHUB_X", 1, 0, 10), "MEMHUB_X=11 is out of range (0 to 10)"),
        (lambda: env_int({"MEMHUB_X": "-1"}, "MEMHUB_X", 1, 0, 10**9), "MEMHUB_X=-1 is out of range (0 to 1000000000)"),
        (lambda: env_float({"MEMHUB_X": "soon"}, "MEMHUB_X", 1.0, 0.0, 9.0), "MEMHUB_X='soon' is not a number"),
        (lambda: env_float({"MEMHUB_X": "nan"}, "MEMHUB_X", 1.0, 0.0, 9.0), "MEMHUB_X=nan is out of range (0 to 9)"),
        (lambda: env_float({"MEMHUB_X": "inf"}, "MEMHUB_X", 1.0, 0.5, 9.0), "MEMHUB_X=inf is out of range (0.5 to 9)"),
        (
            lambda: env_float({"MEMHUB_X": "x"}, "MEMHUB_X", 1.0, 1.0, 60.0, "seconds"),
            "MEMHUB_X='x' is not a number of seconds",
        ),
        (
            lambda: env_float({"MEMHUB_X": "0"}, "MEMHUB_X", 1.0, 1.0, 60.0, "seconds"),
            "MEMHUB_X=0 is out of range (1 to 60 seconds)",
        ),
        (lambda: env_flag({"MEMHUB_X": "maybe"}, "MEMHUB_X", True), "MEMHUB_X='maybe' is not a flag; use 1 or 0"),
    ],
)
def test_bad_values_stop_the_start_naming_the_setting_and_what_it_takes(call, message: str) -> None:  # noqa: ANN001
    with pytest.raises(StartupError) as refused:
        call()
    assert str(refused.value) == message
