"""The sandbox every template renders in: jinja2's, plus a budget that bounds what it may do.

Templates are written by people (a card's ``prompt_template``, a scenario's
``announcement.sop``), so every one is rendered in jinja2's ``ImmutableSandboxedEnvironment``
(no private attributes, no changing lists or dicts in place) with a budget for each render:

- at most :data:`MAX_STEPS` loop iterations, calls and filter calls in all;
- at most :data:`MAX_CHARS` characters output or built (``~``, ``*``, filter and call results,
  every piece of output, buffered ones included);
- what multiplies size (``*``, ``**``, ``%``, ``join``, ``replace``, ``indent``, ``center``,
  ``format``, ...) is checked *before* it runs, so no single step can allocate gigabytes;
- ``range()`` of at most :data:`MAX_RANGE` items; no ``lipsum``.

A template over a limit, or failing in any other way (an undefined name, a division by zero),
is a :class:`~framework.errors.PromptTemplateError` naming the template and its line, never a
raw Python exception.
"""

from __future__ import annotations

import functools
import re
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace, pass_context
from jinja2.visitor import NodeTransformer

from framework.errors import PromptTemplateError, StaffroomError

MAX_STEPS = 100_000
"""Loop iterations, calls and filter calls one render may make (a prompt needs hundreds)."""
MAX_CHARS = 2_000_000
"""Characters one render may output or build; system prompts are tens of thousands."""
MAX_RANGE = 100_000
"""Items one ``range()`` may hold (jinja2's own sandbox limit)."""
MAX_INT_BITS = 4096
"""Size of the largest whole number ``*`` and ``**`` may make (about 1,200 digits)."""

_LOOP, _OUT, _BUILT = "staffroom.loop", "staffroom.out", "staffroom.built"
_COUNT_ARGS = {"center": "width", "batch": "linecount", "slice": "slices"}
"""Filters whose first argument is the size (or item count) of what they build."""
_SPEC = re.compile(r"\{[^{}]*\}|%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[a-zA-Z%]")


class _Budget:
    """What is left of one render's steps and characters."""

    def __init__(self) -> None:
        self.steps = MAX_STEPS
        self.chars = MAX_CHARS

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise PromptTemplateError(
                f"the template makes more than {MAX_STEPS:,} loop iterations and calls"
            )

    def allow(self, size: int, what: str) -> None:
        """Refuse, before it runs, an operation that would build ``size`` characters."""
        if size > self.chars:
            raise PromptTemplateError(
                f"{what} would build {size:,} characters; a template may build at most "
                f"{MAX_CHARS:,} in all ({max(self.chars, 0):,} left)"
            )

    def spend(self, value: Any) -> Any:
        """Count ``value``'s size against the budget; return it unchanged."""
        if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
            self.chars -= len(value)
            if self.chars < 0:
                raise PromptTemplateError(
                    f"the template outputs or builds more than {MAX_CHARS:,} characters"
                )
        return value


_BUDGET: ContextVar[_Budget | None] = ContextVar("staffroom_template_budget", default=None)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    if budget is None:
        # Also what stops jinja2 from folding guarded filters at compile time: the attempt
        # fails, so the filter runs (and is counted) at render time.
        raise PromptTemplateError("a sandboxed template was evaluated outside a render")
    return budget


@contextmanager
def _budgeted() -> Iterator[_Budget]:
    budget = _Budget()
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    budget = _budget()
    for item in iterable:
        budget.step()
        yield item


@pass_context  # a context filter is never folded at compile time, so each use is counted
def _loop_filter(_: Context, value: Iterable[Any]) -> Iterator[Any]:
    return _counted(value)


@pass_context
def _spend_filter(_: Context, value: Any) -> Any:
    return _budget().spend(value)


@pass_context
def _output_filter(_: Context, value: Any) -> Any:
    budget = _budget()
    budget.spend(value if isinstance(value, str) else str(value))
    return value


def _range(*args: int) -> range:
    rng = range(*args)
    if len(rng[: MAX_RANGE + 1]) > MAX_RANGE:  # slicing, not len(): len() overflows at 2**63
        raise PromptTemplateError(
            f"range({', '.join(map(str, args))}) has more than {MAX_RANGE:,} items, "
            "the most a template may use"
        )
    return rng


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _replace_size(text: Any, old: Any, new: Any, count: Any = -1) -> int:
    text, old, new = str(text), str(old), str(new)
    hits = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(0, len(new) - len(old))


def _format_size(fmt: Any, args: Iterable[Any]) -> int:
    """A ceiling for ``fmt % args`` or ``fmt.format(*args)``: widths count in full."""
    widths = sum(int(n) for spec in _SPEC.findall(str(fmt)) for n in re.findall(r"\d+", spec))
    stars = str(fmt).count("*") * max([_int(a) for a in args] + [0])
    return len(str(fmt)) + widths + stars + sum(len(str(a)) for a in args)


def _sized(args: tuple[Any, ...], index: int, kwargs: Mapping[str, Any], key: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(key)


def _check_filter(name: str, budget: _Budget, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Refuse a filter call that would build more than the budget allows (``args[0]`` is the
    value filtered; ``args`` may be changed in place, e.g. an iterator made a list)."""
    value, rest = args[0], tuple(args[1:])
    what = f"the filter {name}"
    if name == "join":
        args[0] = items = list(value)
        sep = _sized(rest, 0, kwargs, "d") or ""
        budget.allow(len(str(sep)) * max(0, len(items) - 1), what)
    elif name == "replace":
        count = _sized(rest, 2, kwargs, "count")
        budget.allow(_replace_size(value, rest[0], rest[1], -1 if count is None else count), what)
    elif name == "indent":
        width = _sized(rest, 0, kwargs, "width") or 4
        per_line = width if isinstance(width, int) else len(str(width))
        budget.allow(len(str(value)) + (str(value).count("\n") + 1) * per_line, what)
    elif name == "wordwrap":
        wrap = _sized(rest, 2, kwargs, "wrapstring") or "\n"
        budget.allow(len(str(value)) * (1 + len(str(wrap))), what)
    elif name in _COUNT_ARGS:
        budget.allow(_int(_sized(rest, 0, kwargs, _COUNT_ARGS[name])), what)
    elif name == "format":
        budget.allow(_format_size(value, (*rest, *kwargs.values())), what)
    elif name == "sum":
        start = _sized(rest, 1, kwargs, "start")
        if start is not None and not isinstance(start, int | float):
            raise PromptTemplateError("the filter sum adds numbers only")
    elif name == "tojson" and _int(_sized(rest, 0, kwargs, "indent")) > 16:
        raise PromptTemplateError("the filter tojson indents by at most 16")


def _guarded(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` with a step counted, its size checked first and its result counted."""
    # The decorators' first argument (context, eval context or environment) comes first.
    extra = 1 if hasattr(func, "jinja_pass_arg") else 0

    @functools.wraps(func)  # keeps jinja_pass_arg, so jinja2 passes what func expects
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.step()
        passed = list(args[extra:])
        if passed:
            _check_filter(name, budget, passed, kwargs)
        return budget.spend(func(*args[:extra], *passed, **kwargs))

    return guarded


def _check_method(budget: _Budget, obj: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Size checks for ``str`` and ``bytes`` methods that can build more than they get."""
    owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
    wrapped = getattr(obj, "__wrapped__", None)  # the sandbox's str.format wrapper
    if wrapped is not None and isinstance(getattr(wrapped, "__self__", None), str):
        budget.allow(_format_size(wrapped.__self__, args), f"str.{name}")
        return args
    if not isinstance(owner, str | bytes):
        return args
    what = f"{type(owner).__name__}.{name}"
    if name in ("center", "ljust", "rjust", "zfill"):
        budget.allow(_int(args[0]) if args else 0, what)
    elif name == "expandtabs":
        tab = _int(args[0]) if args else 8
        tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
        budget.allow(len(owner) + tabs * tab, what)
    elif name == "join" and args:
        items = list(args[0])
        budget.allow(len(owner) * max(0, len(items) - 1), what)
        return (items, *args[1:])
    elif name == "replace" and len(args) >= 2:
        budget.allow(_replace_size(owner, args[0], args[1], *args[2:3]), what)
    elif name == "translate":
        table = args[0] if args and isinstance(args[0], dict) else {}
        longest = max((len(v) for v in table.values() if isinstance(v, str)), default=1)
        budget.allow(len(owner) * longest, what)
    return args


class _Bounded(NodeTransformer):
    """Wraps loops, output and ``~`` in counting filters, so every step is paid for."""

    def visit_For(self, node: nodes.For, *args: Any, **kwargs: Any) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, _LOOP, [], [], None, None, lineno=node.lineno)
        return node

    def visit_Output(self, node: nodes.Output, *args: Any, **kwargs: Any) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            nodes.Filter(child, _OUT, [], [], None, None, lineno=child.lineno)
            for child in node.nodes
        ]
        return node

    def visit_Concat(self, node: nodes.Concat, *args: Any, **kwargs: Any) -> nodes.Node:
        self.generic_visit(node)
        return nodes.Filter(node, _BUILT, [], [], None, None, lineno=node.lineno)


class Sandbox(ImmutableSandboxedEnvironment):
    """The jinja2 environment every Staffroom template renders in (see the module docstring).

    Render only through :meth:`render_template` (or :class:`PromptRenderer`): outside a
    render there is no budget and guarded operations refuse to run.
    """

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, loader: jinja2.BaseLoader | None = None) -> None:
        """A sandbox reading ``{% include %}``-able templates from ``loader`` (if any)."""
        super().__init__(
            loader=loader,
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,  # prompts are plain text, not HTML
        )
        # lipsum() makes text from a count alone; range() is the bounded one.
        self.globals = dict(range=_range, dict=dict, cycler=Cycler, joiner=Joiner)
        self.globals["namespace"] = Namespace
        counters = {_LOOP: _loop_filter, _OUT: _output_filter, _BUILT: _spend_filter}
        self.filters = {name: _guarded(name, f) for name, f in self.filters.items()} | counters

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        _Bounded().visit(tree)
        tree.set_environment(self)
        return tree

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Call ``obj`` from a template: one step, sizes checked first, the result counted."""
        budget = _budget()
        budget.step()
        if isinstance(obj, LoopContext) and args:  # loop(children) in a recursive for
            args = (_counted(args[0]), *args[1:])
        args = _check_method(budget, obj, args)
        return budget.spend(super().call(context, obj, *args, **kwargs))

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """``*``, ``**`` and ``%``, refused before they run when the result would be huge."""
        budget = _budget()
        budget.step()
        if operator == "**" and isinstance(left, int) and isinstance(right, int):
            if abs(left) > 1 and right * left.bit_length() > MAX_INT_BITS:
                raise PromptTemplateError(
                    f"{left} ** {right} is too big (at most {MAX_INT_BITS} bits)"
                )
        elif operator == "*":
            _check_times(budget, left, right)
        elif operator == "%" and isinstance(left, str | bytes):
            pieces = right if isinstance(right, tuple) else (right,)
            budget.allow(_format_size(left, pieces), "the % operator")
        return budget.spend(super().call_binop(context, operator, left, right))


def _check_times(budget: _Budget, left: Any, right: Any) -> None:
    sequences = (str, bytes, list, tuple)
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise PromptTemplateError(f"the product is too big (at most {MAX_INT_BITS} bits)")
    elif isinstance(left, sequences) and isinstance(right, int):
        budget.allow(len(left) * right, "the * operator")
    elif isinstance(right, sequences) and isinstance(left, int):
        budget.allow(len(right) * left, "the * operator")


def _failure(exc: Exception, label: str, filename: str) -> PromptTemplateError:
    # jinja2 rewrites tracebacks so that frames of the template carry its own line numbers.
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    line = exc.lineno if isinstance(exc, jinja2.TemplateSyntaxError) else (lines or [None])[-1]
    where = f"{label}, line {line}" if line else label
    if isinstance(exc, jinja2.TemplateError):
        message = exc.message or str(exc)
    elif isinstance(exc, PromptTemplateError):
        message = str(exc)
    else:
        message = f"{type(exc).__name__}: {exc}"
    return PromptTemplateError(f"{where}: {message}")


def render_template(
    env: Sandbox, template: jinja2.Template | str, context: Mapping[str, Any], *, label: str
) -> str:
    """Render ``template`` (a source string or one from ``env``) with ``context``.

    Any failure, limits included, is a :class:`PromptTemplateError` whose message reads
    ``<label>, line <n>: <what went wrong>`` (``label``: e.g. ``template pm.j2``).
    """
    filename = "<template>"
    try:
        # Compiled outside the budget: jinja2 then folds nothing it would have to count.
        if isinstance(template, str):
            template = env.from_string(template)
        filename = template.filename or filename
        with _budgeted():
            return template.render(**context)
    except PromptTemplateError as exc:
        raise _failure(exc, label, filename) from exc
    except StaffroomError:
        raise  # a context function's own error (an unknown SOP, say) says it best
    except Exception as exc:
        # Template code can raise anything (ZeroDivisionError, OverflowError, RecursionError):
        # each is the template author's to fix, so each gets the same named, located error.
        raise _failure(exc, label, filename) from exc


_UNTRUSTED = Sandbox()


def render_string(source: str, context: Mapping[str, Any], *, label: str) -> str:
    """Render a template written in a spec file (e.g. ``announcement.sop``) in the sandbox."""
    return render_template(_UNTRUSTED, source, context, label=label)


def parse_string(source: str) -> nodes.Template:
    """Parse a template in the sandbox's grammar; :class:`jinja2.TemplateSyntaxError` if bad."""
    return _UNTRUSTED.parse(source)


__all__ = [
    "MAX_CHARS",
    "MAX_INT_BITS",
    "MAX_RANGE",
    "MAX_STEPS",
    "Sandbox",
    "parse_string",
    "render_string",
    "render_template",
]
