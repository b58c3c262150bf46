"""The service's wire format: JSON lines that keep remem's types, and its errors as the same exception types.

Kept to the standard library and ``remem.core.types`` so a Claude Code hook can reach a warm service fast.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import importlib
import json
import math
from pathlib import Path, PurePath
from typing import Any, Mapping

from ..scope import ALL_TENANTS, AllTenants
from ..types import ProviderError, RememError

MAX_LINE = 1 << 28  # one request or answer, once the peer is authenticated


class ServiceError(RememError):
    """The local service could not be reached, started, or did not finish a call."""


class ServiceTimeoutError(ServiceError, TimeoutError):
    """A call to the local service took longer than its timeout."""


class ServiceCrashedError(RememError):
    """The service was killed by a signal while opening the store (Qdrant Edge's memory-mapped files raise SIGBUS
    on a full disk). Not a :class:`ServiceError`: ``Memory()`` reports it instead of opening the store in its
    own process, where the same failure would kill the caller (an agent) instead of the service."""


class ServiceSocketError(RememError):
    """The service's socket cannot be used safely: it is not a socket, or another account owns it, its folder or
    the process listening on it. Deliberately not a :class:`ServiceError`: ``Memory()`` reports it instead of
    quietly opening the store in-process (which would lock every other process out)."""


def encode(obj: Any) -> Any:
    """JSON-ready form that keeps the types remem passes around (datetimes, tuples, remem dataclasses)."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"{obj!r} is not a value remem can store or filter on: numbers must be finite")
        return obj
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, tuple):
        return {"$t": "tuple", "v": [encode(v) for v in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"$t": "frozenset" if isinstance(obj, frozenset) else "set", "v": [encode(v) for v in obj]}
    if isinstance(obj, _dt.datetime):
        return {"$t": "dt", "v": obj.isoformat()}
    if isinstance(obj, _dt.date):
        return {"$t": "date", "v": obj.isoformat()}
    if isinstance(obj, PurePath):
        return {"$t": "path", "v": str(obj)}
    if isinstance(obj, AllTenants):
        return {"$t": "all_tenants"}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        if not cls.__module__.startswith("remem."):
            raise _unsendable(obj)
        spec, names = _dc_info(cls)
        return {"$t": "dc", "c": spec, "v": {n: encode(getattr(obj, n)) for n in names}}
    if isinstance(obj, Mapping):
        out = {str(k): encode(v) for k, v in obj.items()}
        return {"$t": "dict", "v": out} if "$t" in out else out
    raise _unsendable(obj)


def decode(obj: Any) -> Any:
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get("$t")
    if tag is None:
        return {k: decode(v) for k, v in obj.items()}
    val = obj.get("v")
    if tag == "tuple":
        return tuple(decode(v) for v in val)
    if tag == "set":
        return {decode(v) for v in val}
    if tag == "frozenset":
        return frozenset(decode(v) for v in val)
    if tag == "dt":
        return _dt.datetime.fromisoformat(val)
    if tag == "date":
        return _dt.date.fromisoformat(val)
    if tag == "path":
        return Path(val)
    if tag == "all_tenants":
        return ALL_TENANTS
    if tag == "dict":
        return {k: decode(v) for k, v in val.items()}
    if tag == "dc":
        cls = _remem_attr(obj["c"])
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise ServiceError(f"unexpected type {obj['c']!r} from the service")
        return cls(**{k: decode(v) for k, v in val.items()})
    raise ServiceError(f"unknown value tag {tag!r} from the service")


@functools.lru_cache(maxsize=64)
def _dc_info(cls: type) -> tuple[str, tuple[str, ...]]:
    return f"{cls.__module__}:{cls.__qualname__}", tuple(f.name for f in dataclasses.fields(cls) if f.init)


@functools.lru_cache(maxsize=64)
def _remem_attr(spec: str) -> Any:
    module, _, qualname = spec.partition(":")
    if not (module == "remem" or module.startswith("remem.")):
        raise ServiceError(f"refusing to load {spec!r}")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def encode_error(exc: BaseException) -> dict[str, Any]:
    cls = type(exc)
    msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    data: dict[str, Any] = {"type": cls.__name__, "module": cls.__module__, "message": msg}
    if isinstance(exc, ProviderError):
        data["kind"] = exc.kind
        data["message"] = msg.split(": ", 1)[1] if msg.startswith(f"{exc.kind}: ") else msg
    return data


_BUILTIN_ERRORS = {c.__name__: c for c in (ValueError, TypeError, KeyError, FileNotFoundError, FileExistsError,
                                          PermissionError, NotImplementedError, TimeoutError, OSError,
                                          RuntimeError, IsADirectoryError, NotADirectoryError, IndexError)}


def decode_error(data: Mapping[str, Any]) -> BaseException:
    """The exception the service raised, as the same type (remem errors and common built-ins)."""
    name, module, msg = str(data.get("type")), str(data.get("module")), str(data.get("message", ""))
    cls: Any = None
    if module == "builtins":
        cls = _BUILTIN_ERRORS.get(name)
    elif module.startswith("remem."):
        try:
            cls = _remem_attr(f"{module}:{name}")
        except (ImportError, AttributeError, ServiceError):
            cls = None
    if isinstance(cls, type) and issubclass(cls, ProviderError):
        return cls(data.get("kind") or "bad_response", msg)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            return cls(msg)
        except Exception:  # noqa: BLE001 - an exception type with another constructor
            pass
    return RememError(f"{name}: {msg}")


def dumps_line(obj: Any) -> bytes:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_reject) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # what the core would refuse too: say so, not "surrogates not allowed"
        raise ValueError(f"the request holds text that is not valid Unicode (a lone surrogate at character "
                         f"{exc.start} of the request): decode the input as UTF-8, or with errors='replace'") from None


def loads_line(line: bytes | str) -> Any:
    """One JSON line; NaN and Infinity (which Python's json would accept) are refused like any bad value."""
    return json.loads(line, parse_constant=_no_constant)


def _unsendable(obj: Any) -> TypeError:
    """What a caller is told when an argument has no form on the wire (in-process, the core refuses it too)."""
    hint = ": decode it to str first" if isinstance(obj, (bytes, bytearray, memoryview)) else ""
    return TypeError(f"remem takes text, numbers, dates, and lists and mappings of them, not a {type(obj).__name__}"
                     f"{hint}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a value remem can store or filter on: numbers must be finite")


def _reject(obj: Any) -> Any:
    raise _unsendable(obj)


__all__ = ["MAX_LINE", "ServiceError", "ServiceSocketError", "ServiceTimeoutError", "decode", "decode_error",
           "dumps_line", "encode", "encode_error", "loads_line"]
