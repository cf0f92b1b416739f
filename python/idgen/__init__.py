"""idgen: unique IDs (Snowflake, ULID, UUIDv7) over the idgen C library.

    import idgen
    with idgen.Snowflake(registry="file:/var/lib/idgen") as gen:
        print(gen.next())

Snowflake generators lease their worker ID from a registry (file:,
postgres://, etcd://, idgen://, or static with the node values given), and
release it on close(), at the end of a ``with`` or ``async with`` block, when
collected, and at interpreter exit.  Every failure is an idgen.Error whose
subclass, ``code`` and message are the library's (the ``idgen`` command's).
The calls that may wait (leasing, a clock behind, the high-water mark)
release the GIL; their ``*_async`` forms run in the event loop's executor.
"""
from __future__ import annotations

import asyncio
import atexit
import json
import uuid as _uuid
from typing import Any, Dict, List, TypeVar, Union

from . import _idgen
from ._idgen import (  # noqa: F401  (re-exported)
    AgainError,
    BatchError,
    ClockError,
    EmptyError,
    Error,
    ExhaustedError,
    ForkedError,
    InvalidArgumentError,
    LayoutError,
    LeaseError,
    ManualClock,
    MarkError,
    MonotonicOverflowError,
    OutOfMemoryError,
    ParseError,
    PoolFullError,
    Public,
    PublicKeyError,
    RandomError,
    RangeError,
    RegistryError,
    SpaceError,
    ULIDGenerator,
    UUID7Generator,
    compose,
    default_registry,
    presets,
    redact,
    ulid,
    ulid_to_uuid,
    uuid_to_ulid,
    uuid7,
)

__all__ = [
    "Snowflake", "Sequence", "ULIDGenerator", "UUID7Generator", "ManualClock", "ulid", "uuid7",
    "decode", "plan", "layout_info", "compose", "ulid_to_uuid", "uuid_to_ulid",
    "redact", "default_registry", "presets", "Error", "InvalidArgumentError",
    "OutOfMemoryError", "LayoutError", "RangeError", "ParseError", "ClockError",
    "ExhaustedError", "ForkedError", "MonotonicOverflowError", "RandomError",
    "LeaseError", "RegistryError", "PoolFullError", "MarkError", "BatchError",
    "AgainError", "EmptyError", "SpaceError", "PublicKeyError", "Public", "library_version",
]

library_version: str = _idgen.library_version

_H = TypeVar("_H", bound="_Holder")


class _Holder:
    """What Snowflake and Sequence share over their C types (next,
    next_batch and close): ``with`` and ``async with`` blocks that close,
    and the ``*_async`` forms, run in the event loop's executor."""

    __slots__ = ()

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # type: ignore[attr-defined]

    async def __aenter__(self: _H) -> _H:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()

    async def next_async(self) -> int:
        call = self.next  # type: ignore[attr-defined]
        return await asyncio.get_running_loop().run_in_executor(None, call)

    async def next_batch_async(self, n: int) -> List[int]:
        call = self.next_batch  # type: ignore[attr-defined]
        return await asyncio.get_running_loop().run_in_executor(None, call, n)

    async def close_async(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)  # type: ignore[attr-defined]


class Snowflake(_Holder, _idgen.Snowflake):
    """Snowflake(layout="twitter", registry=<the host's default>, node=None,
    lease_field=None, ttl_ms=None, max_start_wait_ms=None, max_borrow_ms=None,
    max_wait_ms=None, clock=None, space=None, random_sequence_start=False)

    Options are keyword-only and checked by the library as ``idgen snowflake``
    checks its flags; an unknown one raises InvalidArgumentError naming it.
    """

    @classmethod
    async def open(cls, **options: Any) -> "Snowflake":
        """The constructor in the event loop's executor (leasing may wait)."""
        return await asyncio.get_running_loop().run_in_executor(None, lambda: cls(**options))

    def __repr__(self) -> str:
        if self.closed:
            return "<idgen.Snowflake closed>"
        lease = self.lease()
        where = lease["registry"] + " " + lease["node"] if lease else "static"
        return f"<idgen.Snowflake {self.layout} {where}>"


class Sequence(_Holder, _idgen.Sequence):
    """Sequence(name, registry=<the host's default>, space=None, min_step=None,
    max_step=None, step=None, prefetch=None, ahead=None, segment_target_ms=None,
    ttl_ms=None, wait_ms=None, strict=False, format=None, tz=None)

    Dense numbers of the counter `name` in a registry (file:, postgres://,
    etcd://): next(), next_batch(n) and, with a format, next_text().  The
    ranges are claimed by the library (in the background, ahead of need);
    close() (or the end of a ``with`` block, collection, exit) gives back
    the unissued rest of the last range when nobody claimed after it.
    Options other than the name are keyword-only; an unknown one raises
    InvalidArgumentError naming it.
    """

    @classmethod
    async def open(cls, name: str, **options: Any) -> "Sequence":
        """The constructor in the event loop's executor (the first claim may wait)."""
        return await asyncio.get_running_loop().run_in_executor(None, lambda: cls(name, **options))

    def __repr__(self) -> str:
        if self.closed:
            return "<idgen.Sequence closed>"
        return f"<idgen.Sequence {self.stats()['key']}>"


def decode(id: Union[int, str, _uuid.UUID], layout: str = "twitter",
           lenient: bool = False) -> Dict[str, Any]:
    """The parts of an ID of any kind: the JSON of ``idgen decode --json`` as a dict."""
    return _idgen._decode(id, layout, lenient)  # type: ignore[no-any-return]


def layout_info(layout: str = "twitter") -> Dict[str, Any]:
    """A layout's geometry: its fields, shifts, epoch, tick and horizon."""
    return json.loads(_idgen._layout_info_json(layout))  # type: ignore[no-any-return]


def plan(layout: str = "twitter", rate: float = 0.0,
         max_borrow_ms: float = 1000.0) -> Dict[str, Any]:
    """What ``idgen plan`` shows of a layout: lifetime, rates, nodes, and for
    a rate asked of one generator whether it is sustained."""
    return json.loads(_idgen._layout_plan_json(layout, rate, max_borrow_ms))  # type: ignore[no-any-return]


# Leases (and sequences' unissued ranges) go back at exit (a normal exit; os._exit and signals skip it: a
# file: lease's lock goes with the process, a network lease expires).
atexit.register(_idgen._close_all)
