"""The one-line error: a UsageError raised inside a gin configurable prints without gin's
"In call to configurable ..." suffix (a function address is no help to a user)."""

from __future__ import annotations

import gin
import pytest

from models.core.errors import USAGE_EXIT_CODE, UsageError, run_guarded


@gin.configurable
def _builder(width: int = 1) -> None:
    raise UsageError(f"_builder.width={width}: use 2")


def test_usage_error_inside_a_configurable_is_one_clean_line(capsys):
    with gin.unlock_config():
        gin.bind_parameter("_builder.width", 3)
    try:
        with pytest.raises(SystemExit) as exit_info:
            run_guarded(_builder)
    finally:
        gin.clear_config()
    assert exit_info.value.code == USAGE_EXIT_CODE
    assert capsys.readouterr().err == "error: _builder.width=3: use 2\n"


def test_predict_input_lines_split_at_newlines_only():
    """A form feed or U+2028 inside a line keeps it one line: output line i answers input i."""
    from models.core.predict import input_lines

    assert input_lines("a\x0cb\u2028c\r\nd\n\ne") == ["a\x0cb\u2028c", "d", "", "e"]
    assert input_lines("") == [] and input_lines("one\n") == ["one"]
