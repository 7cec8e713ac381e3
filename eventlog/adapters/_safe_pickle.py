"""Pickles read as data, opcode by opcode: no global is looked up, nothing is called.

`read_pickle` walks the opcodes (`pickletools.genops`) on a stack of its own. A global is
a `Global` (its name only); ``cls.__new__`` and ``copyreg``'s reconstruction make a
`Shape` whose fields BUILD fills in; a call (REDUCE) is made only for the few globals in
`CALLS`, each building a plain value from arguments it has checked (a list from a list,
bytes from bytes, a date from its 10-byte state), so nothing can allocate more than the
pickle's own length allows (``bytearray(2**30)`` is never called). Every other call is
`NotDecoded`, naming the callable and its arguments. Shared references (the memo) stay
shared here; `bound` pays for each time one is shown.

`check_pickle` walks a pickle the same way before another unpickler loads it (Agent
Framework's restricted one allows ``bytearray``, ``int`` and ``range``, so 41 bytes can ask
it for ``bytearray(2**34)``): it refuses (`PastBudget`) a pickle whose calls would make
more than `MAX_MADE` bytes or items from the sizes they are given (or from a size only
running code would tell), a memo index past the opcodes read so far (an unpickler sizes
its memo by the index), and one this reader cannot read (a counted length past the end,
which an unpickler allocates before it reads).
"""

from __future__ import annotations

import datetime as dt
import decimal
import pickletools
from collections.abc import Callable
from typing import Any

from eventlog.adapters._safe_values import (
    Global,
    NotDecoded,
    Shape,
    Unreadable,
    call,
    preview,
    shape_kind,
)

__all__ = ["CALLS", "MAX_MADE", "PastBudget", "check_pickle", "read_pickle"]

MAX_MADE = 1 << 20
"""The most bytes or items all calls of one pickle may make from sizes they are given
(``bytearray(n)``, ``list(range(n))``): what an unpickler would allocate beyond the
pickle's own length."""


def read_pickle(data: bytes) -> Any:
    """The value a pickle holds, read as data; `Unreadable` when it is malformed or uses
    what only the writer's code can resolve (persistent ids, the extension registry,
    out-of-band buffers)."""
    return _Reader().load(data)


class PastBudget(Unreadable):
    """A stored value refused before it is decoded: loading it would cost past a budget
    (``budget`` names it; the message says what asked for how much)."""

    def __init__(self, budget: str, detail: str) -> None:
        super().__init__(f"{detail}, past {budget}; refused before decoding")
        self.budget, self.detail = budget, detail


def check_pickle(data: bytes) -> None:
    """Refuse a pickle that an unpickler would make large from a small input: `PastBudget`
    past `MAX_MADE` or with a memo index past the opcodes read, `Unreadable` when this
    reader cannot read it (an unpickler allocates what a length says before it finds the
    bytes missing). Nothing is called, nothing is looked up."""
    _Scan().load(data)


class _Mark:
    """Where a MARK opcode left the stack."""


_MARK = _Mark()

_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError,
           UnicodeError, ArithmeticError)


class _Reader:
    def __init__(self) -> None:
        self.stack: list[Any] = []
        self.memo: dict[int, Any] = {}
        self.opcodes = 0

    def load(self, data: bytes) -> Any:
        try:
            for opcode, arg, _ in pickletools.genops(data):
                self.opcodes += 1
                if opcode.name == "STOP":
                    return self.stack.pop()
                step = _STEPS.get(opcode.name)
                if step is None:
                    raise ValueError(f"the {opcode.name} opcode needs the writer's own code")
                step(self, arg)
        except _ERRORS as error:
            raise Unreadable(f"pickle: {type(error).__name__}: {error}") from error
        raise Unreadable("pickle: no STOP opcode")

    def pop_mark(self) -> list[Any]:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index] is _MARK:
                items = self.stack[index + 1:]
                del self.stack[index:]
                return items
        raise IndexError("no MARK on the stack")

    def pop(self, count: int) -> list[Any]:
        if len(self.stack) < count:
            raise IndexError("the stack is shorter than the opcode needs")
        items = self.stack[len(self.stack) - count:]
        del self.stack[len(self.stack) - count:]
        return items

    def push(self, value: Any) -> None:
        self.stack.append(value)

    def charge(self, func: Any, args: Any) -> None:
        """A call of ``func`` with ``args`` is read (`_Scan` counts what it would make)."""

    def memo_index(self, index: int) -> int:
        """The memo index a PUT names (`_Scan` bounds it)."""
        return index


class _Scan(_Reader):
    """The reader, counting what an unpickler's calls would make from given sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.made = 0

    def charge(self, func: Any, args: Any) -> None:
        sized = _sized(func)
        listed = list(args) if isinstance(args, list | tuple) else [args]
        budget = f"the {MAX_MADE:,} a stored pickle's calls may make from sizes they are given " \
                 "(MAX_MADE)"
        for arg in listed:
            made = _made(arg, sized)
            if made is None:
                raise PastBudget(budget, f"{_kind_of(func)}({preview(listed)}) is given "
                                         f"{preview(arg)}, whose size only running it tells")
            self.made += made
            if self.made > MAX_MADE:
                raise PastBudget(budget, f"{_kind_of(func)}({preview(listed)}) would make "
                                         f"{self.made:,} bytes or items")

    def memo_index(self, index: int) -> int:
        if not 0 <= index <= self.opcodes:
            raise PastBudget(
                f"the memo's budget (an index within the {self.opcodes:,} opcodes read so "
                "far: an unpickler sizes its memo by the index)",
                f"a memo index of {index:,}")
        return index


class _Looked(Global):
    """A global reached by ``getattr`` (it may name any class an unpickler allows)."""

    __slots__ = ()


_SIZED = frozenset({"builtins.bytes", "builtins.bytearray"})
"""The callables an unpickler allows that make a length of zeros from an integer."""


def _sized(func: Any) -> bool:
    """Whether ``func`` may make as many bytes as an integer argument says: bytes and
    bytearray, and any callable that is not a named global (``type(b'')``, ``getattr``'s
    result), which may be either."""
    return not isinstance(func, Global) or isinstance(func, _Looked) or func.kind in _SIZED


_BUILT: tuple[type, ...] = (bool, bytes, bytearray, str, list, tuple, dict, set, frozenset,
                            float, complex)
"""Values this reader built from the pickle's own bytes (their size is the pickle's)."""


def _made(arg: Any, sized: bool) -> int | None:
    """How many bytes or items a call makes of one argument: a range's length; for a
    callable that may be sized, an integer's value; None when only running code would
    tell (a range whose bounds are a call's result, or such a callable given a value this
    reader did not build: ``bytearray(int('17179869184'))``)."""
    if _is_range(arg):
        return _range_length(arg)
    if not sized or arg is None or isinstance(arg, _BUILT):
        return 0
    if isinstance(arg, int):
        return max(arg, 0)
    return None


def _is_range(value: Any) -> bool:
    """A ``range`` (a call, ``range.__new__`` or copyreg's reconstruction of one)."""
    return (isinstance(value, NotDecoded) and value.kind == "builtins.range") or (
        isinstance(value, Shape) and shape_kind(value) == "builtins.range")


def _range_length(value: Any) -> int | None:
    """How many items a range holds; None when its bounds are not integers of the pickle."""
    args = value.args if isinstance(value, NotDecoded) else getattr(value, "args", None)
    if not isinstance(args, list) or not 1 <= len(args) <= 3 or not all(
            isinstance(arg, int) and not isinstance(arg, bool) for arg in args):
        return None
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args[:2], (
        args[2] if len(args) == 3 else 1))
    if step == 0:
        return 0
    return max(0, int((stop - start + step - (1 if step > 0 else -1)) // step))


Step = Callable[[_Reader, Any], None]


def _push_arg(reader: _Reader, arg: Any) -> None:
    reader.push(arg)


def _constant(value: Any) -> Step:
    return lambda reader, _: reader.push(value)


def _empty(make: Callable[[], Any]) -> Step:
    return lambda reader, _: reader.push(make())


def _from_mark(make: Callable[[list[Any]], Any]) -> Step:
    return lambda reader, _: reader.push(make(reader.pop_mark()))


def _tuple_of(count: int) -> Step:
    return lambda reader, _: reader.push(tuple(reader.pop(count)))


def _pairs(items: list[Any]) -> dict[Any, Any]:
    return dict(zip(items[::2], items[1::2], strict=True))


def _append(reader: _Reader, _: Any) -> None:
    value = reader.pop(1)
    _extend(reader.stack[-1], value)


def _appends(reader: _Reader, _: Any) -> None:
    items = reader.pop_mark()
    _extend(reader.stack[-1], items)


def _setitem(reader: _Reader, _: Any) -> None:
    pair = reader.pop(2)
    _set_items(reader.stack[-1], pair)


def _setitems(reader: _Reader, _: Any) -> None:
    items = reader.pop_mark()
    _set_items(reader.stack[-1], items)


def _additems(reader: _Reader, _: Any) -> None:
    items = reader.pop_mark()
    _add_items(reader.stack[-1], items)


def _put(reader: _Reader, arg: Any) -> None:
    reader.memo[reader.memo_index(int(arg))] = reader.stack[-1]


def _memoize(reader: _Reader, _: Any) -> None:
    reader.memo[len(reader.memo)] = reader.stack[-1]


def _get(reader: _Reader, arg: Any) -> None:
    reader.push(reader.memo[int(arg)])


def _global(reader: _Reader, arg: Any) -> None:
    module, _, name = str(arg).partition(" ")
    reader.push(Global(module, name))


def _stack_global(reader: _Reader, _: Any) -> None:
    module, name = reader.pop(2)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError("STACK_GLOBAL takes two strings")
    reader.push(Global(module, name))


def _inst(reader: _Reader, arg: Any) -> None:
    module, _, name = str(arg).partition(" ")
    cls, args = Global(module, name), reader.pop_mark()
    reader.charge(cls, args)
    reader.push(_new(cls, args, {}))


def _obj(reader: _Reader, _: Any) -> None:
    items = reader.pop_mark()
    reader.charge(items[0], items[1:])
    reader.push(_new(items[0], items[1:], {}))


def _reduce_step(reader: _Reader, _: Any) -> None:
    func, args = reader.pop(2)
    if isinstance(func, Global) and isinstance(args, tuple) and args and func.kind in (
            "copyreg._reconstructor", "copyreg.__newobj__"):
        # _reconstructor(cls, base, state) calls base.__new__(cls, state) and
        # base.__init__(obj, state); __newobj__(cls, *args) calls cls.__new__(cls, *args).
        if func.kind == "copyreg.__newobj__":
            reader.charge(args[0], args[1:])
        elif len(args) == 3:
            reader.charge(args[1], args[2:])
    else:
        reader.charge(func, args)
    reader.push(_reduce(func, args))


def _newobj(reader: _Reader, _: Any) -> None:
    cls, args = reader.pop(2)
    reader.charge(cls, args)
    reader.push(_new(cls, args, {}))


def _newobj_ex(reader: _Reader, _: Any) -> None:
    cls, args, kwargs = reader.pop(3)
    reader.charge(cls, [*args, *kwargs.values()] if isinstance(args, tuple) and isinstance(
        kwargs, dict) else args)
    reader.push(_new(cls, args, kwargs))


def _build_step(reader: _Reader, _: Any) -> None:
    (state,) = reader.pop(1)
    _build(reader.stack[-1], state)


def _nothing(reader: _Reader, _: Any) -> None:
    return


def _pop(reader: _Reader, _: Any) -> None:
    reader.pop(1)


def _pop_mark(reader: _Reader, _: Any) -> None:
    reader.pop_mark()


_STEPS: dict[str, Step] = {
    **{name: _push_arg for name in (
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "STRING",
        "BINSTRING", "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
        "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "FLOAT", "BINFLOAT")},
    "BYTEARRAY8": lambda reader, arg: reader.push(bytearray(arg)),
    "NONE": _constant(None), "NEWTRUE": _constant(True), "NEWFALSE": _constant(False),
    "EMPTY_LIST": _empty(list), "EMPTY_DICT": _empty(dict), "EMPTY_TUPLE": _empty(tuple),
    "EMPTY_SET": _empty(set),
    "MARK": lambda reader, _: reader.push(_MARK),
    "LIST": _from_mark(list), "TUPLE": _from_mark(tuple), "FROZENSET": _from_mark(frozenset),
    "DICT": _from_mark(_pairs),
    "TUPLE1": _tuple_of(1), "TUPLE2": _tuple_of(2), "TUPLE3": _tuple_of(3),
    "APPEND": _append, "APPENDS": _appends, "SETITEM": _setitem, "SETITEMS": _setitems,
    "ADDITEMS": _additems,
    "POP": _pop, "POP_MARK": _pop_mark,
    "DUP": lambda reader, _: reader.push(reader.stack[-1]),
    "PUT": _put, "BINPUT": _put, "LONG_BINPUT": _put, "MEMOIZE": _memoize,
    "GET": _get, "BINGET": _get, "LONG_BINGET": _get,
    "GLOBAL": _global, "STACK_GLOBAL": _stack_global, "INST": _inst, "OBJ": _obj,
    "REDUCE": _reduce_step, "NEWOBJ": _newobj, "NEWOBJ_EX": _newobj_ex, "BUILD": _build_step,
    "PROTO": _nothing, "FRAME": _nothing,
}
"""What each opcode does here; one that is absent (PERSID, BINPERSID, EXT1/2/4,
NEXT_BUFFER, READONLY_BUFFER) makes the pickle unreadable."""


def _extend(target: Any, items: list[Any]) -> None:
    if isinstance(target, list):
        target.extend(items)
    elif isinstance(target, Shape):
        target.__dict__.setdefault("items", []).extend(items)
    elif not isinstance(target, NotDecoded):
        raise TypeError(f"APPEND to a {type(target).__name__}")


def _set_items(target: Any, items: list[Any]) -> None:
    if isinstance(target, dict):
        target.update(_pairs(items))
    elif isinstance(target, Shape):
        target.__dict__.setdefault("entries", {}).update(_pairs(items))
    elif not isinstance(target, NotDecoded):
        raise TypeError(f"SETITEM on a {type(target).__name__}")


def _add_items(target: Any, items: list[Any]) -> None:
    if isinstance(target, set):
        target.update(items)
    elif isinstance(target, Shape):
        target.__dict__.setdefault("items", []).extend(items)
    elif not isinstance(target, NotDecoded):
        raise TypeError(f"ADDITEMS to a {type(target).__name__}")


def _kind_of(cls: Any) -> str:
    if isinstance(cls, Shape):
        return shape_kind(cls)
    return cls.kind if isinstance(cls, Global) else f"<{type(cls).__name__}>"


def _new(cls: Any, args: Any, kwargs: Any) -> Shape:
    """``cls.__new__(cls, *args, **kwargs)`` as a `Shape` (nothing is constructed)."""
    fields: dict[str, Any] = dict(kwargs) if isinstance(kwargs, dict) and all(
        isinstance(key, str) for key in kwargs) else {}
    if args:
        fields["args"] = list(args)
    return Shape(_kind_of(cls), fields)


def _build(target: Any, state: Any) -> None:
    """BUILD: ``state`` (a dict, or a ``(dict, slots)`` pair) as the object's fields."""
    if not isinstance(target, Shape):
        return  # a state for what is not an object here: shown without it
    if isinstance(state, tuple) and len(state) == 2:
        first, slots = state
        state = {**(first if isinstance(first, dict) else {}),
                 **(slots if isinstance(slots, dict) else {})}
    if isinstance(state, dict) and all(isinstance(key, str) for key in state):
        Shape.__init__(target, shape_kind(target), state)
    else:
        target.__dict__["state"] = state


def _reduce(func: Any, args: Any) -> Any:
    """REDUCE: ``func(*args)`` when `CALLS` builds it from these arguments, a `Shape` for an
    object ``copyreg`` rebuilds, a `Global` for ``getattr(global, name)``, else
    `NotDecoded` naming the call."""
    if not isinstance(args, tuple):
        raise TypeError("REDUCE takes a tuple of arguments")
    if not isinstance(func, Global):
        return call(f"a call of {_kind_of(func)}", args)
    kind = func.kind
    if kind in ("copyreg._reconstructor", "copyreg.__newobj__") and args:
        return _new(args[0], args[1:] if kind.endswith("__newobj__") else (), {})
    if kind == "builtins.getattr" and len(args) == 2 and isinstance(args[1], str):
        return _Looked(_kind_of(args[0]), args[1])
    build = CALLS.get(kind)
    built = None
    if build is not None:
        try:
            built = build(*args)
        except (TypeError, ValueError, OverflowError, ArithmeticError):
            built = None
    return call(kind, args) if built is None else built


def _from_items(make: Callable[[list[Any]], Any]) -> Callable[..., Any]:
    def build(*args: Any) -> Any:
        if not args:
            return make([])
        if len(args) == 1 and isinstance(args[0], list | tuple | set | frozenset):
            return make(list(args[0]))
        return None  # an argument that is not already a container of values: not built
    return build


def _bytes_of(*args: Any) -> bytes | None:
    """Bytes of bytes, or of a string in latin-1 (protocol 2's form); never of a number."""
    if not args:
        return b""
    if len(args) == 1 and isinstance(args[0], bytes | bytearray):
        return bytes(args[0])
    if len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin1", "latin-1"):
        return args[0].encode("latin-1")
    return None


def _bytearray_of(*args: Any) -> bytearray | None:
    found = _bytes_of(*args)
    return None if found is None else bytearray(found)


def _dict_of(*args: Any) -> dict[Any, Any] | None:
    """A dict (OrderedDict, Counter, defaultdict: their items come by SETITEMS)."""
    if not args or (len(args) == 1 and (args[0] is None or isinstance(args[0], Global))):
        return {}
    if len(args) == 1 and isinstance(args[0], dict):
        return dict(args[0])
    return None


def _deque(items: Any = (), maxlen: Any = None) -> list[Any] | None:
    return list(items) if isinstance(items, list | tuple) else None


def _numbers(*args: Any) -> bool:
    return all(isinstance(arg, int | float) and not isinstance(arg, bool) for arg in args)


def _stamp(cls: Callable[..., Any]) -> Callable[..., Any]:
    """A datetime type from its pickled state (bytes, and a tzinfo built here) or ints."""
    def build(*args: Any) -> Any:
        if 1 <= len(args) <= 2 and isinstance(args[0], bytes) and len(args[0]) <= 10 and (
                len(args) == 1 or args[1] is None or isinstance(args[1], dt.tzinfo)):
            return cls(*args)
        if all(isinstance(arg, int) and not isinstance(arg, bool) for arg in args):
            return cls(*args)
        return None
    return build


def _timezone(*args: Any) -> dt.timezone | None:
    if len(args) == 1 and isinstance(args[0], dt.timedelta):
        return dt.timezone(args[0])
    if len(args) == 2 and isinstance(args[0], dt.timedelta) and isinstance(args[1], str):
        return dt.timezone(args[0], args[1][:64])
    return None


CALLS: dict[str, Callable[..., Any]] = {
    "builtins.list": _from_items(list),
    "builtins.tuple": _from_items(tuple),
    "builtins.set": _from_items(list),
    "builtins.frozenset": _from_items(list),
    "collections.deque": _deque,
    "builtins.dict": _dict_of,
    "collections.OrderedDict": _dict_of,
    "collections.defaultdict": _dict_of,
    "collections.Counter": _dict_of,
    "builtins.bytes": _bytes_of,
    "builtins.bytearray": _bytearray_of,
    "_codecs.encode": lambda text, encoding="utf-8": _bytes_of(text, encoding),
    "builtins.complex": lambda re=0.0, im=0.0: complex(re, im) if _numbers(re, im) else None,
    "datetime.datetime": _stamp(dt.datetime),
    "datetime.date": _stamp(dt.date),
    "datetime.time": _stamp(dt.time),
    "datetime.timedelta": lambda *a: dt.timedelta(*a) if _numbers(*a) else None,
    "datetime.timezone": _timezone,
    "decimal.Decimal": lambda a="0": decimal.Decimal(a) if isinstance(a, str) and len(
        a) <= 1000 else None,
}
"""The callables a pickle may name that are built here, each from arguments it checks
(None when they do not fit: the call is then shown, not made). Sets become lists (their
items may not be hashable here)."""
