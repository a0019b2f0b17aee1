"""The compile-time policy: RestrictedPython's transformer, reviewed and extended.

What it adds to the base policy, each for a reason:

- augmented assignment on items and attributes (``d[k] += 1``), rewritten through
  the same guards as a plain read and write;
- ``nonlocal``, ``match`` and ``super().__init__()``, which ordinary scripts use;
- a curated set of dunder methods on script classes (``__repr__``, ``__iter__``,
  ``__enter__``/``__exit__``...), never the ones that run later in the host;
- size-guarded ``*``, ``**``, ``<<`` and ``%`` and guarded format specs, so a memory
  bomb is refused before it allocates;
- exception handlers that re-raise limit errors first, so no ``except`` swallows one,
  and the same check before a ``return``/``break``/``continue`` leaves a ``finally``;
- ``print`` bound to a bounded collector, and the last expression kept as the result.

Iteration and unpacking are left unwrapped on purpose: iterating exposes no
attribute, and a per-item guard would double the cost of every loop.
"""

from __future__ import annotations

import ast
import copy
import re
import string
from typing import Any

from RestrictedPython.transformer import (
    ALLOWED_FUNC_NAMES,
    INSPECT_ATTRIBUTES,
    RestrictingNodeTransformer,
    copy_locations,
)

from ._errors import recursion_safe

RESULT_NAME = "_codeact_result_"

# Read-only dunder attributes that are plain strings: scripts use them in messages.
READABLE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})

# Dunder attributes the guard answers with what the object model permits: the
# script's own class (``type(x)``'s answer), its own objects' and classes' ``__dict__``, a
# dataclass's fields, an enum's members, an exception's chain and notes, a script class's
# bases and subclasses and a builtin class's bases as ``type()`` shows classes. Never
# frames, code, globals or a host class's hierarchy (no class but the script's own
# answers ``__subclasses__``).
GUARDED_DUNDERS = frozenset(
    {
        "__class__",
        "__dict__",
        "__dataclass_fields__",
        "__cause__",
        "__context__",
        "__suppress_context__",
        "__notes__",
        "__match_args__",
        "__slots__",
        "__members__",
        "__bases__",
        "__base__",
        "__mro__",
        "__subclasses__",
        "__abstractmethods__",
        "__annotations__",
    }
)

# Dunder data the guard shows on the types that declare it (``_ownership.DUNDER_DATA``):
# a typing form's parts, and ``__wrapped__`` on the script's own functions.
DATA_DUNDERS = frozenset(
    {"__args__", "__origin__", "__parameters__", "__metadata__", "__wrapped__"}
)

# Dunder names a class body may assign: data the interpreter reads, never code.
CLASS_DATA_DUNDERS = frozenset({"__slots__", "__match_args__"})

# The enum machinery's own names (``obj._value_ = num`` in an enum's ``__new__``, a
# ``_missing_`` hook): no guard is named so, and they are read and set only on the
# script's own objects.
ENUM_SUNDERS = frozenset(
    {"_value_", "_name_", "_missing_", "_generate_next_value_", "_ignore_", "_order_"}
)

# Dunder variables a script may bind: a module's metadata, plain data no machinery reads
# (never ``__builtins__``, ``__metaclass__`` or a name the import system consults).
SCRIPT_DUNDER_NAMES = frozenset(
    {"__all__", "__version__", "__author__", "__license__", "__copyright__", "__email__"}
)

# What ``copy`` asks an object to make its copy: the copy facade calls them, so they count
# only as functions the script wrote (a factory's, namedtuple's ``__getnewargs__``, is host code).
COPY_HOOKS = frozenset(
    {"__copy__", "__deepcopy__", "__getnewargs__", "__getstate__", "__setstate__"}
)

# Operators a script class may implement, in their plain, reflected and in-place forms.
_OPERATORS = [
    "add",
    "sub",
    "mul",
    "matmul",
    "truediv",
    "floordiv",
    "mod",
    "divmod",
    "pow",
    "lshift",
    "rshift",
    "and",
    "or",
    "xor",
]

# Dunder methods a script class may define: each is called only by script code or
# inside the sandbox (results are converted to plain data before leaving it). Absent
# on purpose: ``__del__`` (it runs wherever the collector runs, unwatched),
# ``__getattribute__`` (every read of the object, the guards' own included) and
# ``__await__`` (the event loop would drive it). The descriptor protocol runs where
# an attribute of the script's own classes is read or set, as a ``property`` does; a
# script's ``__new__`` builds through the guard's ``__new__`` of its base, which makes
# only the script's own objects.
SCRIPT_DUNDERS = frozenset(
    ALLOWED_FUNC_NAMES
    | {f"__{op}__" for op in _OPERATORS}
    | {f"__r{op}__" for op in _OPERATORS}
    | {f"__i{op}__" for op in _OPERATORS if op != "divmod"}
    | {
        "__repr__",
        "__str__",
        "__format__",
        "__hash__",
        "__bool__",
        "__len__",
        "__length_hint__",
        "__iter__",
        "__next__",
        "__reversed__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__missing__",
        "__getattr__",
        "__setattr__",
        "__delattr__",
        "__enter__",
        "__exit__",
        "__aenter__",
        "__aexit__",
        "__aiter__",
        "__anext__",
        "__call__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__invert__",
        "__index__",
        "__int__",
        "__float__",
        "__complex__",
        "__round__",
        "__trunc__",
        "__floor__",
        "__ceil__",
        "__post_init__",
        "__init_subclass__",
        "__class_getitem__",  # Box[int] on the script's own class, called by no host code
        "__new__",
        # descriptors, on the script's classes only (a host class is never written)
        "__get__",
        "__set__",
        "__delete__",
        "__set_name__",
        # copies (the copy facade calls the script's own: COPY_HOOKS), paths, bytes
        *COPY_HOOKS,
        "__fspath__",
        "__bytes__",
    }
)

# Calls handed to these run concurrently in async code: a tool call written inside
# one (directly, in a list or tuple, or as a comprehension's element) is awaitable.
ASYNC_TAKERS = frozenset(
    {"gather", "create_task", "ensure_future", "wait_for", "shield", "wait", "as_completed"}
)

# Public attribute names checked at run time (format traversal, size), everywhere.
GUARDED_ATTRIBUTES = frozenset(
    {
        "format",
        "format_map",
        "ljust",
        "rjust",
        "center",
        "zfill",
        "expandtabs",
        "replace",
        "join",
        "translate",
    }
)

# Methods of plain data that call back per item in C (``xs.sort(key=xs.count)``): never read
# raw, so the guard hands out a form whose callback enters Python on every call.
CALLBACK_METHODS = frozenset({"sort"})

# Attributes that lead to frames, code, or the class hierarchy, beyond the base list.
FORBIDDEN_ATTRIBUTES = frozenset(
    INSPECT_ATTRIBUTES | {"mro", "f_lineno", "tb_lineno", "format_field"}
)

_GUARDED_BINOPS: dict[type[ast.operator], str] = {
    ast.Mult: "_mul_",
    ast.Pow: "_pow_",
    ast.LShift: "_lshift_",
    ast.Mod: "_mod_",
    ast.FloorDiv: "_floordiv_",
}


class CodeActPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy, opened where agents need it and closed where they must not."""

    # A script's last expression is its result; a string given to ``exec`` has none.
    keeps_last_value = True

    # Names ------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id == "print" and isinstance(node.ctx, ast.Load):
            replacement = ast.Name("_print_", ast.Load())
            copy_locations(replacement, node)
            return replacement
        if node.id == "printed":  # no special meaning here: an ordinary name
            self.used_names[node.id] = True
            return node
        if node.id in READABLE_DUNDERS and isinstance(node.ctx, ast.Load):
            # ``== "__main__"``; the module's docstring; in a class body, its own names
            # (``__module__``, ``__qualname__``: strings CPython binds before the body runs)
            return node
        if node.id == "__file__" and isinstance(node.ctx, ast.Load):
            # read as CPython reads it in code run from a string: no such global, so a
            # NameError (nothing in the scope or the builtins binds it)
            return node
        if getattr(node, "codeact_internal", False):  # a guard name the transformer wrote
            return node
        if getattr(node, "class_dunder", False):  # ``__hash__ = None``, ``__radd__ = __add__``
            return node
        if node.id in SCRIPT_DUNDERS and node.col_offset != 0:
            # a method defined in a function, bound to the name a class decorator reads
            # (``cls.__repr__ = __repr__``): an ordinary local, read by nothing else
            return node
        if node.id == "super" and not getattr(node, "zero_argument_call", False):
            self.error(node, "super may only be called as super() in scripts.")
        return super().visit_Name(node)

    def check_import_names(self, node: ast.Import | ast.ImportFrom) -> Any:
        if isinstance(node, ast.ImportFrom) and [alias.name for alias in node.names] == ["*"]:
            if getattr(node, "is_lazy", 0):  # a lazy import skips the guarded __import__
                self.error(node, "Lazy import statements are not allowed.")
            # binds the names the facade lists in __all__ (its public members, none starting
            # with "_", so no guard name): what importing each by name would bind; outside
            # the module or a class body CPython's compiler refuses it
            return self.node_contents_visit(node)
        return super().check_import_names(node)

    def inject_print_collector(self, node: Any, position: int = 0) -> None:
        """Printing goes to the run's bounded collector; nothing to inject."""

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        for name in node.names:
            self.check_name(node, name)
        return node

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        # Methods (indented defs) may use the curated dunders; nothing else may.
        if allow_magic_methods and name in SCRIPT_DUNDERS and node.col_offset != 0:
            return
        if name in CLASS_DATA_DUNDERS and self._class_names and node.col_offset != 0:
            return
        if name in ENUM_SUNDERS and self._class_names and node.col_offset != 0:
            return
        if name is not None and (is_private_name(name) or name in SCRIPT_DUNDER_NAMES):
            return
        if name == "__debug__":  # compiled as the constant True; binding it is a SyntaxError
            return
        if name is not None and len(name) > 2 and name[0] == name[-1] == "_" and name[1] != "_":
            # _getattr_, _print_, _write_: a script rebinding one would replace its guard
            self.error(node, f'"{name}" is reserved: names like _name_ belong to the runtime.')
            return
        super().check_name(node, name, allow_magic_methods=allow_magic_methods)

    # Iteration and unpacking: left as CPython compiles them (see the module docstring).

    def guard_iter(self, node: Any) -> Any:
        return self.node_contents_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        return self.node_contents_visit(node)

    def visit_With(self, node: ast.With) -> Any:
        return self.node_contents_visit(node)

    # Attributes ---------------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        # Cls.mro(): the guard answers it as __mro__ (the script's own classes, builtins)
        read_mro = node.attr == "mro" and isinstance(node.ctx, ast.Load)
        if node.attr in FORBIDDEN_ATTRIBUTES and not read_mro:
            self.error(node, f'"{node.attr}" is a restricted attribute.')
        readable_dunder = (
            node.attr in READABLE_DUNDERS
            or node.attr in GUARDED_DUNDERS
            or node.attr in SCRIPT_DUNDERS  # x.__eq__, Base.__init__: the guard decides
            or node.attr in DATA_DUNDERS
        ) and isinstance(node.ctx, ast.Load)
        if is_private_name(node.attr) or node.attr in ENUM_SUNDERS or readable_dunder:
            # A script's own _private attributes, and __name__-like strings: the guard
            # decides at run time (private names only on the script's own objects).
            node = self.node_contents_visit(node)
            if isinstance(node.ctx, ast.Load):
                call = _call("_getattr_", node.value, ast.Constant(self._mangled(node.attr)))
                copy_locations(call, node)
                return call
            if node.attr[:1] == "_":  # a host object's _names are its internals
                writer = _call(
                    "_write_private_", node.value, ast.Constant(self._mangled(node.attr))
                )
            else:
                writer = _call("_write_", node.value)
            node.value = writer
            copy_locations(node.value, node)
            return node
        if node.attr in CLASS_BODY_DUNDERS and isinstance(node.ctx, ast.Store | ast.Del):
            # number.__abs__ = None: on the script's own instances only (a class's dunders
            # are bound where the class is made, by its factory's rules)
            node = self.node_contents_visit(node)
            node.value = _call("_write_instance_", node.value)
            copy_locations(node.value, node)
            return node
        if (
            isinstance(node.ctx, ast.Load)
            and not node.attr.startswith("_")
            and node.attr not in GUARDED_ATTRIBUTES
            and node.attr not in CALLBACK_METHODS
            and not node.attr.endswith("__roles__")
        ):
            return _guarded_read(self.node_contents_visit(node))
        return super().visit_Attribute(node)

    def _mangled(self, name: str) -> str:
        """``self.__x`` in class C reads ``_C__x``, as CPython compiles it: the name the
        guard is given must be the one the (mangled) store wrote."""
        if not (self._class_names and name.startswith("__") and not name.endswith("__")):
            return name
        owner = self._class_names[-1].lstrip("_")
        return f"_{owner}{name}" if owner else name

    def visit_Call(self, node: ast.Call) -> Any:
        func = node.func
        if _callee_name(func) in ASYNC_TAKERS:
            node.args = [_awaitable_arguments(a) for a in node.args]
        if isinstance(func, ast.Name) and func.id == "super":
            two = len(node.args) == 2 and not node.keywords
            if two and not any(isinstance(a, ast.Starred) for a in node.args):
                # super(Cls, self): through the guard, which takes the script's own classes
                # only (super(str, x) would reach a host method past its override)
                guard = ast.Name("_super_", ast.Load())
                guard.codeact_internal = True  # type: ignore[attr-defined]
                call = ast.Call(func=guard, args=[self.visit(a) for a in node.args], keywords=[])
                copy_locations(call, node)
                copy_locations(guard, node)
                return call
            if node.args or node.keywords:
                self.error(
                    node, "super() takes no arguments, or a class and an object, in scripts."
                )
            func.zero_argument_call = True  # type: ignore[attr-defined]
        if (
            isinstance(func, ast.Attribute)
            and func.attr in GUARDED_ATTRIBUTES
            and isinstance(func.ctx, ast.Load)
            and not any(isinstance(a, ast.Starred) for a in node.args)
            and all(k.arg is not None for k in node.keywords)
        ):
            if _statically_safe(func.value, func.attr, node.args, node.keywords):
                func.value = self.visit(func.value)
                node.args = [self.visit(a) for a in node.args]
                node.keywords = [self.visit(k) for k in node.keywords]
                return node
            # s.replace(a, b) -> _method_(s, "replace", a, b): one guarded call.
            call = ast.Call(
                func=ast.Name("_method_", ast.Load()),
                args=[self.visit(func.value), ast.Constant(func.attr), *map(self.visit, node.args)],
                keywords=[self.visit(k) for k in node.keywords],
            )
            copy_locations(call, node)
            return call
        if isinstance(func, ast.Name) and func.id in ("eval", "exec"):
            # the string is compiled under this same policy when it runs (_string_code)
            return self.node_contents_visit(node)
        visited = super().visit_Call(node)
        if (
            isinstance(visited, ast.Call)
            and isinstance(visited.func, ast.Name)
            and visited.func.id == "_apply_"
            and visited.args
        ):
            # f(*args, **kw): called as written (RestrictedPython's _apply_ only calls it,
            # and a duplicate keyword's TypeError would name _apply_, not f)
            visited.func = visited.args.pop(0)
        if isinstance(visited, ast.Call) and isinstance(visited.func, ast.IfExp):
            return _guarded_method_call(visited)
        return visited

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        if isinstance(node.ctx, ast.Load):  # reading an item exposes nothing: plain
            return self.node_contents_visit(node)
        return super().visit_Subscript(node)

    # Operators ----------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        guard = _GUARDED_BINOPS.get(type(node.op))
        tests = _int_tests(node) if guard is not None else None
        raw = copy.deepcopy(node) if tests else None
        node = self.node_contents_visit(node)
        if guard is None or (guard == "_mul_" and _is_small_int(node.left, node.right)):
            return node
        call = ast.Call(func=ast.Name(guard, ast.Load()), args=[node.left, node.right], keywords=[])
        copy_locations(call, node)
        if raw is None or not tests:
            return call
        # Integer arithmetic on names: the int checks inline, the raw operation when
        # they hold, the guard otherwise. Names may be read twice: harmless.
        test = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
        choice = ast.IfExp(test=test, body=raw, orelse=call)
        copy_locations(choice, node)
        ast.fix_missing_locations(choice)
        return choice

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        if isinstance(node.target, ast.Name):
            if type(node.op) not in _GUARDED_IOPERATORS:
                self.check_name(node.target, node.target.id)
                return self.node_contents_visit(node)
            return super().visit_AugAssign(node)
        node = self.node_contents_visit(node)
        target = node.target
        assert isinstance(target, ast.Attribute | ast.Subscript)
        op = ast.Constant(_IOPERATORS[type(node.op)])
        holder = self.gen_tmp_name()
        statements: list[ast.stmt] = [ast.Assign([ast.Name(holder, ast.Store())], target.value)]
        if isinstance(target, ast.Subscript):
            key = self.gen_tmp_name()
            statements.append(ast.Assign([ast.Name(key, ast.Store())], target.slice))
            current: ast.expr = ast.Subscript(
                ast.Name(holder, ast.Load()), ast.Name(key, ast.Load()), ast.Load()
            )
            store: ast.expr = ast.Subscript(
                _call("_write_", ast.Name(holder, ast.Load())),
                ast.Name(key, ast.Load()),
                ast.Store(),
            )
        else:
            assert isinstance(target, ast.Attribute)
            current = _call(
                "_getattr_", ast.Name(holder, ast.Load()), ast.Constant(self._mangled(target.attr))
            )
            store = ast.Attribute(
                _call("_write_", ast.Name(holder, ast.Load())), target.attr, ast.Store()
            )
        statements.append(ast.Assign([store], _call("_inplacevar_", op, current, node.value)))
        for statement in statements:
            copy_locations(statement, node)
        return statements

    def visit_FormattedValue(self, node: ast.FormattedValue) -> Any:
        node = self.node_contents_visit(node)
        if node.format_spec is None:
            return node
        # f"{x:>{width}}": format through the guard, which bounds the width.
        call = _call("_format_spec_", node.value, ast.Constant(node.conversion), node.format_spec)
        copy_locations(call, node)
        replacement = ast.FormattedValue(value=call, conversion=-1, format_spec=None)
        copy_locations(replacement, node)
        return replacement

    # Exceptions ---------------------------------------------------------------------

    # ``return``, ``break`` or ``continue`` leaving a ``finally`` block discards the
    # exception in flight: CPython runs it, so scripts may, but a limit or a stop in flight
    # is raised again first (``_reraise_limits_`` sees it: the finally is its handler).
    _finally_depth = 0
    _loop_depth_in_finally = 0

    def visit_Try(self, node: ast.Try) -> Any:
        # a statement may come back as several (a hoisted check, an augmented assignment)
        node.body = self._visit_all(node.body)
        node.handlers = self._visit_all(node.handlers)
        node.orelse = self._visit_all(node.orelse)
        outer = (self._finally_depth, self._loop_depth_in_finally)
        self._finally_depth, self._loop_depth_in_finally = self._finally_depth + 1, 0
        node.finalbody = self._visit_all(node.finalbody)
        self._finally_depth, self._loop_depth_in_finally = outer
        return node

    def _visit_all(self, nodes: list[Any]) -> list[Any]:
        visited: list[Any] = []
        for child in nodes:
            result = self.visit(child)
            visited.extend(result if isinstance(result, list) else [result])
        return visited

    def _visit_loop(self, node: ast.For | ast.While, visit: Any) -> Any:
        self._loop_depth_in_finally += 1
        try:
            return visit(node)
        finally:
            self._loop_depth_in_finally -= 1

    def visit_For(self, node: ast.For) -> Any:
        return self._visit_loop(node, super().visit_For)

    def visit_While(self, node: ast.While) -> Any:
        return self._visit_loop(node, super().visit_While)

    def _scope(self, node: Any, visit: Any) -> Any:
        outer = (self._finally_depth, self._loop_depth_in_finally)
        self._finally_depth, self._loop_depth_in_finally = 0, 0
        try:
            return visit(node)
        finally:
            self._finally_depth, self._loop_depth_in_finally = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        return self._scope(node, super().visit_FunctionDef)

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        return self._scope(node, super().visit_Lambda)

    _class_names: tuple[str, ...] = ()  # the enclosing classes, innermost last (mangling)

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        _mark_class_dunders(node)
        outer_names = self._class_names
        self._class_names = (*outer_names, node.name)
        try:
            made = self._scope(node, super().visit_ClassDef)
        finally:
            self._class_names = outer_names
        # RestrictedPython rebuilds the statement without its keywords: ``class
        # Csv(Plugin, kind='csv')`` would lose ``kind`` silently. The checked keywords go
        # back (never ``metaclass``, refused above); the class factory decides who gets them.
        made.keywords.extend(k for k in node.keywords if k.arg != "metaclass")
        return made

    # async ----------------------------------------------------------------------------

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        # The same checks as a def: its name, its arguments, its body.
        self.check_name(node, node.name, allow_magic_methods=True)
        self.check_function_argument_names(node)
        outer = (self._finally_depth, self._loop_depth_in_finally)
        self._finally_depth, self._loop_depth_in_finally = 0, 0
        try:
            return self.node_contents_visit(node)
        finally:
            self._finally_depth, self._loop_depth_in_finally = outer

    def visit_Await(self, node: ast.Await) -> Any:
        if isinstance(node.value, ast.Call):  # ``await tool(...)``: the tool's awaitable form
            node.value = _awaitable_call(node.value)
        return self.node_contents_visit(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> Any:
        return self._visit_loop(node, self.node_contents_visit)  # type: ignore[arg-type]

    def visit_AsyncWith(self, node: ast.AsyncWith) -> Any:
        return self.node_contents_visit(node)

    def visit_TryStar(self, node: Any) -> Any:
        # ``except*``: each handler re-raises a limit first, as in a plain ``try``.
        return self.visit_Try(node)

    def visit_Return(self, node: ast.Return) -> Any:
        visited = super().visit_Return(node)
        assert isinstance(visited, ast.Return)
        return _limits_first(visited) if self._finally_depth else visited

    def visit_Break(self, node: ast.Break | ast.Continue) -> Any:
        leaves = self._finally_depth and not self._loop_depth_in_finally
        return _limits_first(node) if leaves else node

    visit_Continue = visit_Break  # the same jump, the same check

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        visited = super().visit_ExceptHandler(node)
        assert isinstance(visited, ast.ExceptHandler)
        node = visited
        if node.type is None:  # a bare except catches Exception, never a limit
            node.type = ast.Name("Exception", ast.Load())
            copy_locations(node.type, node)
        check = ast.Expr(_call("_reraise_limits_"))
        copy_locations(check, node)
        node.body.insert(0, check)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        # ``x: int = 1``: the target and value go through the usual checks and guards.
        return self.node_contents_visit(node)

    # match --------------------------------------------------------------------------

    def visit_Match(self, node: ast.Match) -> Any:
        node = self.node_contents_visit(node)
        hoisted: list[ast.stmt] = []
        for case in node.cases:
            for pattern in ast.walk(case.pattern):
                if isinstance(pattern, ast.MatchClass) and (pattern.kwd_attrs or pattern.patterns):
                    # ``case C(x=v)`` (and ``case C(v)``, through ``C.__match_args__``) reads
                    # ``subject.x`` raw once isinstance(subject, C) holds. C is replaced by a
                    # stand-in whose isinstance check first asks the guard whether those
                    # names may be read on the subject: nothing is read, let alone bound,
                    # that a guarded read would refuse.
                    name = self.gen_tmp_name()
                    names = ast.Tuple([ast.Constant(a) for a in pattern.kwd_attrs], ast.Load())
                    positional = ast.Constant(len(pattern.patterns))
                    check = _call("_match_class_", pattern.cls, names, positional)
                    assign = ast.Assign([ast.Name(name, ast.Store())], check)
                    copy_locations(assign, node)
                    hoisted.append(assign)
                    pattern.cls = ast.Name(name, ast.Load())
                    copy_locations(pattern.cls, pattern)
        if not hoisted:
            return node
        for statement in hoisted:
            ast.fix_missing_locations(statement)
        return [*hoisted, node]

    def visit_match_case(self, node: ast.match_case) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchValue(self, node: ast.MatchValue) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchSingleton(self, node: ast.MatchSingleton) -> Any:
        return node

    def visit_MatchSequence(self, node: ast.MatchSequence) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> Any:
        self.check_name(node, node.name)
        return node

    def visit_MatchMapping(self, node: ast.MatchMapping) -> Any:
        self.check_name(node, node.rest)
        return self.node_contents_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> Any:
        self.check_name(node, node.name)
        return self.node_contents_visit(node)

    def visit_MatchOr(self, node: ast.MatchOr) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> Any:
        # Keyword patterns read attributes without the guard: hold them to the same rules
        # here, and at run time to the object model (see visit_Match).
        for name in node.kwd_attrs:
            # a script's own _private fields may be matched; the guard checks the subject
            if (name.startswith("_") and not is_private_name(name)) or name in FORBIDDEN_ATTRIBUTES:
                self.error(node, f'"{name}" is not allowed in a class pattern.')
        return self.node_contents_visit(node)

    # Module -------------------------------------------------------------------------

    def visit_Module(self, node: ast.Module) -> Any:
        visited = super().visit_Module(node)
        assert isinstance(visited, ast.Module)
        node = visited
        if self.keeps_last_value and node.body and isinstance(node.body[-1], ast.Expr):
            last = node.body[-1]
            assign = ast.Assign([ast.Name(RESULT_NAME, ast.Store())], last.value)
            copy_locations(assign, last)
            node.body[-1] = assign
        return node


SMALL_FACTOR = 64
SMALL_INT = 1 << 62

# Augmented operators that cannot build a large object in one step need no guard.
_GUARDED_IOPERATORS = frozenset({ast.Mult, ast.Pow, ast.LShift, ast.Mod, ast.FloorDiv})

_IOPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+=",
    ast.Sub: "-=",
    ast.Mult: "*=",
    ast.Div: "/=",
    ast.Mod: "%=",
    ast.Pow: "**=",
    ast.LShift: "<<=",
    ast.RShift: ">>=",
    ast.BitOr: "|=",
    ast.BitXor: "^=",
    ast.BitAnd: "&=",
    ast.FloorDiv: "//=",
    ast.MatMult: "@=",
}


def _guarded_read(node: ast.Attribute) -> ast.expr:
    """``x.a``: raw when ``x`` is plain data or a script object, through the guard otherwise.

    A name receiver is checked inline (a type lookup, no call); any other receiver is
    evaluated once, inside the guard call.
    """
    receiver = node.value
    call = _call("_getattr_", receiver, ast.Constant(node.attr))
    copy_locations(call, node)
    if not isinstance(receiver, ast.Name):
        return call
    kind = _call("_type_", ast.Name(receiver.id, ast.Load()))
    test = ast.Compare(kind, [ast.In()], [ast.Name("_raw_", ast.Load())])
    choice = ast.IfExp(test=test, body=node, orelse=call)
    choice.guarded_read = True  # type: ignore[attr-defined]
    copy_locations(choice, node)
    ast.fix_missing_locations(choice)
    return choice


MAX_DUPLICATED_NODES = 40


def _guarded_method_call(call: ast.Call) -> ast.expr:
    """``x.m(args)``: the check around the whole call, so the raw branch is a plain method
    call (CPython's fast path for it: no bound method is built).

    The arguments stand in both branches, only one of which runs; past a small size
    the check stays around the attribute alone, so nesting cannot grow code much.
    """
    choice = call.func
    assert isinstance(choice, ast.IfExp)
    parts = [*call.args, *call.keywords]
    if sum(1 for part in parts for _ in ast.walk(part)) > MAX_DUPLICATED_NODES:
        return call
    if not getattr(choice, "guarded_read", False):
        return call
    raw = ast.Call(func=choice.body, args=call.args, keywords=call.keywords)
    guarded = ast.Call(
        func=choice.orelse, args=copy.deepcopy(call.args), keywords=copy.deepcopy(call.keywords)
    )
    result = ast.IfExp(test=choice.test, body=raw, orelse=guarded)
    for made in (raw, guarded, result):
        copy_locations(made, call)
    ast.fix_missing_locations(result)
    return result


# What a class body may bind by assignment: the dunder methods it may define (bound to
# another of its functions, a class, or None, as CPython's ``__hash__ = None``: each has
# no more power than a ``def`` calling the same value), its docstring, and a ``__name__``
# its instances show (the class's own name is ``type``'s, which a body cannot replace).
CLASS_BODY_DUNDERS = SCRIPT_DUNDERS | {"__doc__", "__name__"}


def _mark_class_dunders(node: ast.ClassDef) -> None:
    """Mark the names a class body's own assignments bind among ``CLASS_BODY_DUNDERS``
    (never one inside a method or a comprehension: those are not the class's)."""
    for statement in node.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets = [statement.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in CLASS_BODY_DUNDERS:
                target.class_dunder = True  # type: ignore[attr-defined]
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            # ``__radd__ = __add__``: a method the body bound above, read back
            _mark_class_dunder_reads(statement.value)


def _mark_class_dunder_reads(value: ast.expr | None) -> None:
    """Mark the reads of script dunder names in a class-body value that the class scope
    evaluates (not inside a lambda or comprehension, scopes of their own). Such a read
    finds the class's own method; failing that, no global or builtin has such a name."""
    pending: list[ast.AST] = [] if value is None else [value]
    while pending:
        node = pending.pop()
        if isinstance(node, _OWN_SCOPES):
            continue
        read = isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        if read and node.id in SCRIPT_DUNDERS:  # type: ignore[attr-defined]
            node.class_dunder = True  # type: ignore[attr-defined]
        pending.extend(ast.iter_child_nodes(node))


_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _awaitable_call(call: ast.Call) -> ast.Call:
    """``f(a)`` -> ``_acall_(f, a)``: awaitable when ``f`` is a tool, else ``f``'s own call."""
    if _callee_name(call.func) in ASYNC_TAKERS:  # await gather(tool(x)): its calls too
        call.args = [_awaitable_arguments(a) for a in call.args]
    name = ast.Name("_acall_", ast.Load())
    name.codeact_internal = True  # type: ignore[attr-defined]
    made = ast.Call(func=name, args=[call.func, *call.args], keywords=call.keywords)
    copy_locations(made, call)
    copy_locations(name, call)
    return made


def _awaitable_arguments(argument: ast.expr) -> ast.expr:
    """The calls an argument of gather/create_task/... hands over, in their awaitable form."""
    inner = argument.value if isinstance(argument, ast.Starred) else argument
    replaced: ast.expr | None = None
    if isinstance(inner, ast.Call):
        replaced = _awaitable_call(inner)
    elif isinstance(inner, ast.GeneratorExp | ast.ListComp | ast.SetComp):
        if isinstance(inner.elt, ast.Call):
            inner.elt = _awaitable_call(inner.elt)
    elif isinstance(inner, ast.List | ast.Tuple | ast.Set):
        inner.elts = [_awaitable_call(e) if isinstance(e, ast.Call) else e for e in inner.elts]
    if replaced is None:
        return argument
    if isinstance(argument, ast.Starred):
        argument.value = replaced
        return argument
    return replaced


def _limits_first(node: ast.stmt) -> list[ast.stmt]:
    """``return`` (``break``, ``continue``) out of a finally: a limit in flight goes on."""
    check = ast.Expr(_call("_reraise_limits_"))
    copy_locations(check, node)
    ast.fix_missing_locations(check)
    return [check, node]


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])


@recursion_safe  # reads only
def is_private_name(name: str) -> bool:
    """``_name``, ``__name`` or ``_`` itself: a script's own private name, never a dunder, a
    guard's name (guards end in ``_``) or a temporary."""
    if name == "_":  # no guard is named so (``_: KW_ONLY``, ``obj._``)
        return True
    return (
        len(name) > 1
        and name[0] == "_"
        and name.strip("_") != ""
        and not name.endswith("_")
        and not (name.startswith("_tmp") and name[4:].isdigit())
    )


SMALL_WIDTH = 10_000


def _statically_safe(
    receiver: ast.expr, name: str, args: list[ast.expr], keywords: list[ast.keyword]
) -> bool:
    """Calls of the guarded methods whose arguments prove them harmless at compile time.

    ``s.replace("-", "_")`` cannot grow ``s``; ``s.ljust(20)`` cannot allocate much;
    ``"{} of {name}".format(...)`` has no field path to traverse and no wide spec.
    """
    if keywords:
        return False
    constants: list[Any] = [a.value for a in args if isinstance(a, ast.Constant)]
    if len(constants) != len(args):
        return False
    if name == "replace" and len(constants) >= 2:
        old, new = constants[0], constants[1]
        return type(old) is type(new) and type(old) in (str, bytes) and len(new) <= len(old)
    if name in ("ljust", "rjust", "center", "zfill", "expandtabs") and constants:
        width = constants[0]
        limit = SMALL_FACTOR if name == "expandtabs" else SMALL_WIDTH
        return type(width) is int and width <= limit
    if name in ("format", "format_map"):
        return isinstance(receiver, ast.Constant) and _plain_template(receiver.value)
    return False


def _plain_template(template: object) -> bool:
    """A format template with simple field names and narrow, literal specs only."""
    if not isinstance(template, str):
        return False
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return False
    for _, field, spec, _ in fields:
        if field is None:
            continue
        if "." in field or "[" in field or "{" in (spec or ""):
            return False
        if any(int(n) > SMALL_WIDTH for n in re.findall(r"\d+", spec or "")):
            return False
    return True


_INT_CLOSED = (ast.Add, ast.Sub, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor)


def _int_tests(node: ast.expr) -> list[ast.expr] | None:
    """Checks that prove ``node`` is integer arithmetic on small ints, or None if none can.

    Names are checked with ``name.__class__ is _int_`` (``_int_`` is a hidden global a
    script cannot rebind); factors of a product must also be below ``SMALL_INT``, so
    no step can build a huge number.
    """
    tests: dict[str, ast.expr] = {}

    def walk(part: ast.expr, factor: bool) -> bool:
        if isinstance(part, ast.Constant):
            return type(part.value) is int and (not factor or abs(part.value) < SMALL_INT)
        if isinstance(part, ast.Name):
            tests.setdefault(part.id, _is_int_check(part.id))
            if factor:
                tests.setdefault(f"{part.id} small", _is_small_check(part.id))
            return True
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.USub | ast.UAdd | ast.Invert):
            return walk(part.operand, factor)
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mult):
            simple = all(isinstance(o, ast.Name | ast.Constant) for o in (part.left, part.right))
            return simple and walk(part.left, True) and walk(part.right, True)
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.FloorDiv | ast.Mod):
            # long division is quadratic in C: raw only between small operands
            return walk(part.left, True) and walk(part.right, True)
        if isinstance(part, ast.BinOp) and isinstance(part.op, _INT_CLOSED):
            return walk(part.left, False) and walk(part.right, False)
        return False

    return list(tests.values()) if walk(node, False) else None


def _is_int_check(name: str) -> ast.expr:
    klass = ast.Attribute(ast.Name(name, ast.Load()), "__class__", ast.Load())
    return ast.Compare(klass, [ast.Is()], [ast.Name("_int_", ast.Load())])


def _is_small_check(name: str) -> ast.expr:
    bound = ast.Constant(SMALL_INT)
    return ast.Compare(
        ast.UnaryOp(ast.USub(), bound), [ast.Lt(), ast.Lt()], [ast.Name(name, ast.Load()), bound]
    )


def _is_small_int(left: ast.expr, right: ast.expr) -> bool:
    """Products that cannot build a large object, proven at compile time.

    A float factor never repeats a sequence (``seq * 2.0`` is a TypeError). A small int
    factor is safe only beside a literal (``'-' * 40``, ``[0] * 8``): beside a name it
    could repeat a sequence of ten million items, which the int proof or the guard
    handles instead. In ``'a' * 64 * 64 * 64`` the literal side is itself a product, so
    it keeps its guard.
    """
    for factor, other in ((left, right), (right, left)):
        value = factor.value if isinstance(factor, ast.Constant) else None
        if type(value) is float:
            return True
        if type(value) is not int:
            continue
        literal = isinstance(other, ast.Constant) or (
            isinstance(other, ast.List | ast.Tuple)
            and not any(isinstance(e, ast.Starred) for e in other.elts)  # [*xs] is unbounded
        )
        if literal and abs(int(value)) <= SMALL_FACTOR and not _contains_product(other):
            return True
    return False


def _contains_product(node: ast.expr) -> bool:
    return any(
        isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult | ast.Pow | ast.LShift)
        for n in ast.walk(node)
    )


__all__ = [
    "ASYNC_TAKERS",
    "CALLBACK_METHODS",
    "COPY_HOOKS",
    "DATA_DUNDERS",
    "ENUM_SUNDERS",
    "FORBIDDEN_ATTRIBUTES",
    "GUARDED_ATTRIBUTES",
    "GUARDED_DUNDERS",
    "READABLE_DUNDERS",
    "RESULT_NAME",
    "SCRIPT_DUNDERS",
    "SCRIPT_DUNDER_NAMES",
    "CodeActPolicy",
    "is_private_name",
]
