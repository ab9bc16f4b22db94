"""Type checks for the settings dataclasses that gin fills: `train.epochs = 'two'` is one line
naming the binding, not a TypeError deep inside the run."""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable

from models.core.errors import UsageError


def check_field_types(settings: object, scope: str) -> None:
    """UsageError for the first field of the dataclass `settings` whose value does not have
    its annotated type; `scope` is the gin name (`train`, `evaluation`, ...)."""
    hints = typing.get_type_hints(type(settings))
    for field in dataclasses.fields(settings):
        value, expected = getattr(settings, field.name), hints[field.name]
        if not _matches(value, expected):
            raise UsageError(f"{scope}.{field.name} = {value!r}: expected {_describe(expected)}")


def check_argument_type(function: Callable, name: str, value: object, setting: str) -> None:
    """UsageError naming `setting` (e.g. `compare_gan.width = 'wide'`) when `value` does not
    have the type `function` annotates its argument `name` with (unannotated: any)."""
    try:
        hints = typing.get_type_hints(inspect.unwrap(function))
    except (NameError, TypeError):  # an annotation this module cannot resolve: no check
        return
    if name in hints and not _matches(value, hints[name]):
        raise UsageError(f"{setting}: expected {_describe(hints[name])}")


def _matches(value: object, expected: object) -> bool:
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in args)
    if expected is type(None):
        return value is None
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is tuple:
        item = args[0] if args else object
        return isinstance(value, (tuple, list)) and all(_matches(v, item) for v in value)
    if origin is dict:
        key, item = args or (object, object)
        if not isinstance(value, dict):
            return False
        return all(_matches(k, key) and _matches(v, item) for k, v in value.items())
    if origin is Callable or expected is Callable:
        return callable(value)
    if expected is typing.Any or expected is object:
        return True
    return isinstance(value, origin or expected)


def _describe(expected: object) -> str:
    """'int', 'float or None', 'a tuple of str', ... for the error line."""
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in args)
    if expected is type(None):
        return "None"
    if origin is tuple:
        return f"a tuple of {_describe(args[0]) if args else 'values'}"
    if origin is dict:
        return f"a dict of {_describe(args[0])} to {_describe(args[1])}" if args else "a dict"
    if origin is Callable or expected is Callable:
        return "a callable"
    name = getattr(expected, "__name__", str(expected))
    return "a number" if expected is float else name
