"""Frozen result dataclasses <-> JSON-ready dicts, driven by their type hints.

Used for checkpoints (a stage's result is stored as JSON and rebuilt on a re-run) and for
`adr-review review --format json`. Unknown keys are ignored and missing ones take the field's
default, so adding a field with a default does not invalidate stored checkpoints; a change that
does must bump SERDE_VERSION (it is part of every run key).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

from adr_review.core.results import BlindSpotResult, RecallResult, Review

SERDE_VERSION = 2  # 2: findings carry quote/section/gap (not evidence), exclusions, unverified;
# Usage carries unpriced_models, temperature_not_sent and fallbacks

T = TypeVar("T")


class SerdeError(ValueError):
    """Stored JSON that does not fit the dataclass (a stale or corrupted checkpoint)."""


def to_dict(obj: Any) -> Any:
    """A dataclass (or a tuple/mapping of them) as plain JSON-ready values; tuples become lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [to_dict(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise SerdeError(f"cannot serialise {type(obj).__name__}")


def from_dict(cls: type[T], data: Any) -> T:
    """Rebuild `cls` from to_dict() output; raises SerdeError on a shape that does not fit."""
    try:
        return typing.cast(T, _build(cls, data, cls.__name__))
    except SerdeError:
        raise
    except (TypeError, ValueError, KeyError) as exc:
        raise SerdeError(f"{cls.__name__}: {exc}") from exc


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(tp: Any, data: Any, where: str) -> Any:
    if tp is Any:
        return data
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if data is None:
            if type(None) in args:
                return None
            raise SerdeError(f"{where}: null for a required value")
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _build(arg, data, where)
            except (SerdeError, TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise SerdeError(f"{where}: no variant fits ({'; '.join(errors)})")
    if origin is typing.Literal:
        if data not in get_args(tp):
            raise SerdeError(f"{where}: {data!r} is not one of {get_args(tp)}")
        return data
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, Mapping):
            raise SerdeError(f"{where}: expected an object for {tp.__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _build(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SerdeError(f"{where}: missing field {f.name!r}")
        return tp(**kwargs)
    if origin is tuple:
        args = get_args(tp)
        if not isinstance(data, (list, tuple)):
            raise SerdeError(f"{where}: expected a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        if len(args) != len(data):
            raise SerdeError(f"{where}: expected {len(args)} items, got {len(data)}")
        return tuple(_build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data, strict=True)))
    if origin in (Mapping, dict, typing.Mapping) or tp in (dict, Mapping):
        if not isinstance(data, Mapping):
            raise SerdeError(f"{where}: expected an object")
        args = get_args(tp)
        value_tp = args[1] if len(args) == 2 else Any
        return {str(k): _build(value_tp, v, f"{where}[{k!r}]") for k, v in data.items()}
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise SerdeError(f"{where}: expected a number")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise SerdeError(f"{where}: expected an integer")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise SerdeError(f"{where}: expected a boolean")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise SerdeError(f"{where}: expected a string")
        return data
    raise SerdeError(f"{where}: unsupported type {tp!r}")


# Named helpers for the three results that cross a checkpoint or the CLI.


def recall_to_dict(result: RecallResult) -> dict[str, Any]:
    return typing.cast(dict[str, Any], to_dict(result))


def blindspots_to_dict(result: BlindSpotResult) -> dict[str, Any]:
    return typing.cast(dict[str, Any], to_dict(result))


def blindspots_from_dict(data: Mapping[str, Any]) -> BlindSpotResult:
    return from_dict(BlindSpotResult, data)


def review_to_dict(review: Review, *, compact: bool = False) -> dict[str, Any]:
    """compact: drop the candidates' full ADR text and sections (for --format json; not for checkpoints)."""
    data = typing.cast(dict[str, Any], to_dict(review))
    if compact and data.get("recall"):
        for cand in data["recall"].get("candidates", []):
            adr = cand.get("adr", {})
            adr["text"] = ""
            adr["sections"] = {}
    return data


def review_from_dict(data: Mapping[str, Any]) -> Review:
    return from_dict(Review, data)
