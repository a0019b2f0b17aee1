"""Attacks on the sandbox, each asserting that nothing happened outside it.

Every script tries to reach the host (the os module, a frame, a secret held by a
tool, shared process state) and, if it got there, to create a marker file. Each
test checks the run failed with the expected code, the marker does not exist,
and the secret appears nowhere in what the script produced.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from codeact.sandbox import ScriptOutcome

from .conftest import HOST_LOG, SECRET, SHARED_RESULT

SEC = "CODE_SECURITY_VIOLATION"
RUN = "CODE_RUNTIME_ERROR"
LIMIT = "CODE_RESOURCE_LIMIT"

# After an escape, this would create the marker file.
TOUCH = "os.system('touch {marker}')"

ATTACKS: list[tuple[str, str, str]] = [
    # Class hierarchy walks
    ("subclasses-walk", "[c for c in ().__class__.__bases__[0].__subclasses__()]", SEC),
    ("getattr-class", "getattr((), '__class__').__subclasses__()", SEC),
    # a builtin's ancestors are builtins the script holds already (object is one); the walk
    # is stopped where it would go down again, to the host's classes
    (
        "getattr-built-name",
        "getattr(getattr(getattr((), '__cl' + 'ass__'), '__ba' + 'se__'), '__subcl' + 'asses__')()",
        SEC,
    ),
    ("type-mro", "type(()).mro()[-1].__subclasses__()", SEC),
    ("getattr-mro", "getattr(type(()), 'mro')()[-1].__subclasses__()", SEC),
    ("object-subclasses", "object.__subclasses__()", SEC),
    ("type-subclasses-call", "type.__subclasses__(object)", SEC),
    ("int-base", "int.__base__.__subclasses__()", SEC),
    ("int-subclasses", "int.__subclasses__()", SEC),  # bool, and the host's int classes
    ("exception-subclasses", "Exception.__subclasses__()", SEC),
    ("error-mro-subclasses", "KeyError.__mro__[1].__subclasses__()", SEC),
    ("script-class-object-subclasses", "class A:\n    pass\nA.__base__.__subclasses__()", SEC),
    ("subclasses-through-type", "class A:\n    pass\ntype(A).__subclasses__(A)", SEC),
    ("type-mro-itself", "type.__mro__", SEC),  # type is no builtin class of the script's
    ("hasattr-dunder", "hasattr(1, '__subclasshook__')", SEC),
    # a class's __new__ builds the script's own objects only
    ("type-three-args-new", "type('X', (), {'__new__': lambda cls: object.__new__(dict)})()", SEC),
    ("metaclass-subclass-type", "class M(type):\n    pass", SEC),
    ("metaclass-keyword", "class X(metaclass=type):\n    pass", SEC),
    # Format strings
    ("format-class", "'{0.__class__.__base__.__subclasses__}'.format(1)", SEC),
    ("format-globals", "def f():\n    pass\n'{0.__globals__}'.format(f)", SEC),
    (
        "format-map",
        "class Point:\n    def __init__(self):\n        pass\n"
        "'{a.__init__.__globals__}'.format_map({'a': Point()})",
        SEC,
    ),
    ("format-type-level", "str.format('{0.__class__.__base__.__subclasses__}', 1)", SEC),
    ("format-gi-frame", "def g():\n    yield 1\n'{0.gi_frame}'.format(g())", SEC),
    (
        "string-formatter",
        "import string\nstring.Formatter().format('{0.__class__.__mro__[1].__subclasses__}', 1)",
        SEC,
    ),
    (
        "string-formatter-vformat",
        "import string\ndef f():\n    pass\nstring.Formatter().vformat('{0.__dict__}', (f,), {})",
        SEC,
    ),
    ("userstring", "import collections\ncollections.UserString('{0.__class__}').format(1)", RUN),
    ("super-format", "super(str, 'x').format('{0.__class__}', 1)", SEC),
    ("format-width-bomb", "'{:>999999999}'.format(1)", LIMIT),
    ("format-literal-wide-spec", "'{0:{1}}'.format(1, 999999999)", LIMIT),
    # a number's precision counts as a width does ('g' allocates it, whatever it writes)
    ("format-precision-fixed", "f'{1.5:.999999999f}'", LIMIT),
    ("format-precision-shortest", "format(1.5, '.999999999g')", LIMIT),
    (
        "format-precision-decimal",
        "import decimal\nformat(decimal.Decimal('1.5'), '.999999999g')",
        LIMIT,
    ),
    (
        "format-precision-script-str",
        "class S(str):\n    pass\nformat(S('x'), '.999999999d')",
        LIMIT,
    ),
    (
        "format-literal-index-path",
        "'{0[0].__class__.__bases__[0].__subclasses__}'.format([1])",
        SEC,
    ),
    ("replace-literal-growth", "('a' * 10**6).replace('a', 'bb' * 600)", LIMIT),
    ("ljust-variable-width", "w = 10**10\n'x'.ljust(w)", LIMIT),
    ("fstring-width-bomb", "w = 999999999\nf'{1:>{w}}'", LIMIT),
    ("percent-width-bomb", "'%0999999999d' % 1", LIMIT),
    ("percent-star-bomb", "'%*d' % (999999999, 1)", LIMIT),
    # Frames, generators, tracebacks, code
    ("generator-frame", "def g():\n    yield 1\ng().gi_frame", SEC),
    ("generator-frame-getattr", "def g():\n    yield 1\ngetattr(g(), 'gi_frame')", SEC),
    ("generator-code", "def g():\n    yield 1\ng().gi_code", SEC),
    ("generator-yieldfrom", "def g():\n    yield 1\ng().gi_yieldfrom", SEC),
    ("traceback", "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame", SEC),
    (
        "traceback-getattr",
        "try:\n    1/0\nexcept Exception as e:\n    getattr(e, '__traceback__')",
        SEC,
    ),
    (
        "exception-context",
        "try:\n    try:\n        1/0\n    except Exception:\n        raise ValueError('second')\n"
        "except Exception as e:\n    getattr(e.__context__, '__traceback__')",
        SEC,
    ),
    ("function-code", "def f():\n    pass\nf.__code__", SEC),
    ("function-globals", "def f():\n    pass\ngetattr(f, '__globals__')", SEC),
    ("closure-cells", "def outer():\n    x = 1\n    return lambda: x\nouter().__closure__", SEC),
    (
        "closure-getattr",
        "def outer():\n    x = 1\n    return lambda: x\ngetattr(outer(), '__closure__')",
        SEC,
    ),
    ("attributeerror-obj", "try:\n    (1).nope\nexcept AttributeError as e:\n    e.obj", SEC),
    (
        "attributeerror-obj-getattr",
        "try:\n    (1).nope\nexcept AttributeError as e:\n    getattr(e, 'obj')",
        SEC,
    ),
    (
        "except-star",
        "try:\n    raise ExceptionGroup('g', [ValueError()])\nexcept* ValueError as eg:\n"
        "    getattr(eg, '__traceback__')",
        SEC,
    ),
    (
        "match-class-frame",
        "def g():\n    yield 1\nmatch g():\n    case object(gi_frame=f):\n        f",
        SEC,
    ),
    ("match-class-dunder", "match 1:\n    case object(__class__=c):\n        c", SEC),
    # Guard-name shadowing (RestrictedPython advisories)
    ("posonly-shadows-getattr", "def f(_getattr_, /):\n    return (1).real\nf(getattr)", SEC),
    ("kwonly-shadows-write", "def f(*, _write_=None):\n    pass", SEC),
    ("lambda-shadows-getattr", "(lambda _getattr_: (1).real)(print)", SEC),
    ("assign-guard-name", "_getattr_ = getattr", SEC),
    ("builtins-name", "__builtins__", SEC),
    # Imports and modules that re-export the host
    # os and sys are facades: no shell, no module table, no host submodule by import
    ("import-os", f"import os\n{TOUCH}", RUN),
    ("import-sys", "import sys\nsys.modules", RUN),
    ("from-import-os", "from os import system", RUN),
    ("import-subprocess", "import subprocess", SEC),
    ("dunder-import", "__import__('os')", SEC),
    ("importlib", "import importlib", SEC),
    ("relative-import", "from . import x", RUN),  # an ImportError: a script has no package
    ("star-import-subprocess", "from subprocess import *", SEC),
    ("star-import-sys-modules", "from sys import *\nmodules", RUN),
    ("json-codecs", "import json\njson.codecs", RUN),
    ("json-decoder-module", "from json import decoder", RUN),
    # a facade has no __name__: from-import would otherwise find "json.encoder" in the
    # host's sys.modules
    ("json-encoder-module", "from json import encoder", RUN),
    ("datetime-sys", f"import datetime\ndatetime.sys.modules['os'].{TOUCH[3:]}", RUN),
    ("re-enum", "import re\nre.enum", RUN),
    ("re-sre-compile", "import re\nre._compiler", SEC),
    ("statistics-sys", "import statistics\nstatistics.sys", RUN),
    ("random-os", "import random\nrandom._os", SEC),
    # get_type_hints evaluates an annotation's text without eval: a call is no annotation
    (
        "typing-get-type-hints-of-a-call",
        "import typing\ndef f(x: \"__import__('os').system('touch {marker}')\"):\n    pass\n"
        "typing.get_type_hints(f)",
        RUN,
    ),
    # an annotation kept as text is still checked as code: what it names is refused
    (
        "future-annotation-dunder",
        "from __future__ import annotations\n"
        "def f(x: ().__class__.__base__.__subclasses__()[0].__init__.__globals__):\n"
        "    pass\nf.__annotations__",
        SEC,
    ),
    ("typing-sys", "import typing\ntyping.sys", RUN),
    ("functools-update-wrapper", "import functools\nfunctools.update_wrapper", RUN),
    ("copy-copyreg", "import copy\ncopy.copyreg", RUN),
    ("facade-private", "import json\ngetattr(json, '_members')", SEC),
    ("uuid-getnode", "import uuid\nuuid.getnode()", RUN),
    ("decimal-context-emax", "import decimal\ndecimal.localcontext(Emax=10**18)", LIMIT),
    # Builtins that are not there
    ("open", "open('/etc/passwd').read()", RUN),
    # eval and exec compile their string under the script's own policy, with its guards
    ("eval-dunder", "eval('().__class__.__bases__[0].__subclasses__()')", SEC),
    ("exec-dunder-built", "exec('x = object.__sub' + 'classes__()')", SEC),
    ("exec-import-os", 'exec("import os\\n' + TOUCH + '")', RUN),
    (
        "exec-getattribute-hook",
        "exec('class A:\\n    def __getattribute__(self, n):\\n        return 1')",
        SEC,
    ),
    # the script's namespaces never supply a guard: the code runs in a copy holding the sandbox's
    (
        "exec-globals-supply-write-guard",
        "import json\nexec('json.dumps = len', {'json': json, '_write_': lambda o: o})\n"
        "json.dumps({})",
        SEC,
    ),
    (
        "exec-locals-supply-write-guard",
        "import json\nexec('json.dumps = len', {}, {'json': json, '_write_': lambda o: o})\n"
        "json.dumps({})",
        SEC,
    ),
    (
        "exec-guard-added-after-the-function-was-made",
        "import json\ng = {'json': json}\nexec('def f():\\n    json.dumps = len', g)\n"
        "g['_write_'] = lambda o: o\ng['f']()\njson.dumps({})",
        SEC,
    ),
    (
        "exec-guard-added-while-it-runs",
        "import json\ng = {'json': json}\ndef rig():\n    g['_write_'] = lambda o: o\n"
        "g['rig'] = rig\nexec('rig()\\njson.dumps = len', g)\njson.dumps({})",
        SEC,
    ),
    (
        "exec-mapping-class-as-locals",
        "import json\nclass M(dict):\n    def __getitem__(self, key):\n        return lambda o: o\n"
        "exec('json.dumps = len', {'json': json}, M())",
        RUN,
    ),
    (
        "exec-rigged-key",
        "class K:\n    def __eq__(self, other):\n        return True\n"
        "    def __hash__(self):\n        return hash('_write_')\n"
        "exec('x = 1', {K(): lambda o: o})",
        RUN,
    ),
    (
        "exec-builtins-supplied",
        "exec('import json', {'__builtins__': {'__import__': print}})\nos",
        RUN,
    ),
    ("exec-globals-of-a-host-function", "import json\nexec('x = 1', json.dumps.__globals__)", SEC),
    ("exec-source-size", "exec('x = 1\\n' * 60_000)", LIMIT),
    # singledispatchmethod binds the script's functions by CPython's own __get__ alone
    (
        "singledispatchmethod-of-a-host-function",
        "import functools\nfunctools.singledispatchmethod(len)",
        RUN,
    ),
    (
        "singledispatchmethod-of-a-descriptor",
        "import functools\nclass D:\n    def __get__(self, o, c):\n        return print\n"
        "functools.singledispatchmethod(classmethod(D()))",
        RUN,
    ),
    (
        "singledispatchmethod-made-by-type",
        "import functools\nclass C:\n    @functools.singledispatchmethod\n    def f(self, x):\n"
        "        return x\ntype(C().f)(None, None, None)",
        RUN,
    ),
    (
        "singledispatchmethod-insides",
        "import functools\nclass C:\n    @functools.singledispatchmethod\n    def f(self, x):\n"
        "        return x\nC().f._dispatcher",
        SEC,
    ),
    # ast offers literal_eval alone, on text no longer than a script
    ("ast-literal-eval-size", "import ast\nast.literal_eval('1' * 200_000)", LIMIT),
    ("ast-parse", "import ast\nast.parse('1')", RUN),
    ("ast-node-classes", "import ast\nast.Constant", RUN),
    # compile checks the string as exec does and hands back a stand-in: its code stays away
    ("compile-code-read", "compile('1', 'x', 'eval')._code", SEC),
    ("compile-code-by-getattr", "getattr(compile('1', 'x', 'eval'), '_code')", SEC),
    (
        "compile-code-by-pattern",
        "match compile('1', 'x', 'eval'):\n    case object(_code=c):\n        c",
        SEC,
    ),
    ("compile-code-by-format", "'{0._code}'.format(compile('1', 'x', 'eval'))", SEC),
    ("compile-code-by-copy", "import copy\ncopy.deepcopy(compile('1', 'x', 'eval'))._code", SEC),
    ("compile-made-by-type", "type(compile('1', 'x', 'eval'))(None, 'x', None)", SEC),
    ("compile-write", "compile('1', 'x', 'eval').co_filename = 'y'", SEC),
    (
        "compile-dunder-string",
        "eval(compile('().__class__.__bases__[0].__subclasses__()', 'x', 'eval'))",
        SEC,
    ),
    ("compile-reserved-name", "compile('_write_ = len', 'x', 'exec')", SEC),
    ("compile-source-size", "compile('x = 1\\n' * 60_000, 'x', 'exec')", LIMIT),
    ("compile-an-ast", "compile('1', 'x', 'exec', 0x400)", RUN),  # ONLY_AST: ast is not offered
    ("compile-single", "compile('1', 'x', 'single')", RUN),  # would print through host sys
    (
        "compile-file-name-of-the-scripts-path",
        "class P:\n    def __fspath__(self):\n        return 'p'\ncompile('1', P(), 'eval')",
        RUN,
    ),
    ("globals", "globals()['_getattr_']", RUN),
    ("vars", "vars()['_getattr_']", RUN),  # the calling frame's names, never the guards'
    ("dir-guards", "[n for n in dir() if n[:1] == '_' and n[-2:] != '__'][0]", RUN),
    ("breakpoint", "breakpoint()", SEC),
    ("system-exit", "raise SystemExit(0)", RUN),
    ("base-exception", "raise BaseException('x')", RUN),
    ("keyboard-interrupt", "raise KeyboardInterrupt", RUN),
    ("exit", "exit()", RUN),
    # Descriptors, metaclasses and dunders that run later in the host
    # a descriptor acts where the script's own classes hold it, never on a host class
    (
        "descriptor-on-a-host-class",
        "class D:\n    def __get__(self, obj, kind):\n        return kind\n"
        "import json\njson.JSONEncoder.x = D()",
        SEC,
    ),
    ("del-method", "class D:\n    def __del__(self):\n        pass", SEC),
    ("getattribute", "class D:\n    def __getattribute__(self, name):\n        return 1", SEC),
    (
        # EnumType's own functional form would bind what the mapping holds, unchecked
        "dunder-in-an-enum-made-by-a-call",
        "import enum\nclass B(enum.Enum):\n    pass\nB('E', {'__del__': print, 'A': 1})",
        SEC,
    ),
    # enum.EnumType as scripts hold it names the metaclass and answers isinstance: its own
    # call (the functional form, or a class from a namespace) is never reached through it
    ("enum-type-called", "import enum\nenum.EnumType('E', (), {'A': 1})", SEC),
    ("enum-type-written", "import enum\nenum.EnumType.x = 1", SEC),  # one stand-in, every session's
    (
        "enum-type-of-a-class-called",
        "import enum\nclass B(enum.Enum):\n    A = 1\ntype(B)('E', 'X Y')",
        SEC,
    ),
    ("reduce", "class D:\n    def __reduce__(self):\n        return (print, ('x',))", SEC),
    ("class-dunder-attribute", "class D:\n    __module__ = 'os'", SEC),
    ("super-with-args-dunder", "super(int, 1).__init__()", SEC),
    (
        # super(Cls, obj) past a host class: only the script's own classes are taken
        "super-two-args-host-class",
        "import json\nclass E(json.JSONEncoder):\n    pass\nsuper(json.JSONEncoder, E())",
        SEC,
    ),
    (
        "super-two-args-stand-in",
        "class B(bytes):\n    pass\nsuper(bytes, B(b'x'))",
        SEC,
    ),
    ("super-as-value", "s = super\ns(str, 'x').format('{0.__class__}', 1)", SEC),
    (
        "formatter-super-bypass",
        "import string\nf = string.Formatter()\nsuper(type(f), f).get_field('0.__class__', (1,), {})",
        SEC,
    ),
    ("str-format-unbound", "f = str.format\nf('{0.__class__.__subclasses__}', 1)", SEC),
    ("join-bomb-generator", "''.join('x' * 10**6 for _ in range(10**4))", LIMIT),
    ("staticmethod-func", "s = staticmethod(len)\ns.__func__", SEC),
    # an lru_cache hands out what it wraps only when that is the script's own function
    ("lru-cache-wrapped-host", "import functools\nfunctools.lru_cache(None)(len).__wrapped__", SEC),
    # An alias reads through to its origin, guarded as the origin is read
    ("alias-origin-subclasses", "list[int].__subclasses__()", SEC),
    ("alias-of-object-walk", "type(list[int])(object, ()).__subclasses__()", SEC),
    ("alias-of-a-facade-function", "import json\ntype(list[int])(json.dumps, ()).__globals__", SEC),
    (
        "alias-of-a-host-object-dict",
        "import queue\ntype(list[int])(queue.Queue(), ()).__dict__",
        SEC,
    ),
    ("alias-private-of-origin", "import queue\ntype(list[int])(queue.Queue(), ())._items", SEC),
    ("alias-real-pattern-class", "import re\nre.Pattern[str].__origin__._compiled", SEC),
    ("alias-maker-parts", "import re\nre.Pattern.__class_getitem__._call", SEC),
    ("alias-maker-self", "list.__class_getitem__.__self__", SEC),
    ("alias-maker-of-a-typing-form", "import typing\ntyping.Generic.__class_getitem__", SEC),
    ("alias-reduce", "list[int].__reduce__()", SEC),
    # a stand-in every session shares (it holds its repr's two strings) is written by no path
    ("opaque-setattr", "import re\nsetattr(re.Pattern, 'shared', 1)", SEC),
    ("opaque-assign", "import re\nre.Match.shared = 1", SEC),
    ("opaque-object-setattr", "import re\nobject.__setattr__(re.Pattern, '__module__', 'x')", SEC),
    ("opaque-vars", "import re\nvars(re.Pattern)['__qualname__'] = 'x'", RUN),
    ("opaque-dict", "import re\nre.Pattern.__dict__", SEC),
    # zoneinfo: the process's zone cache is never cleared or bypassed, nor a file read
    ("zoneinfo-clear-cache", "import zoneinfo\nzoneinfo.ZoneInfo.clear_cache()", RUN),
    (
        "zoneinfo-from-file",
        "import zoneinfo, io\nzoneinfo.ZoneInfo.from_file(io.BytesIO(b'TZif'))",
        RUN,
    ),
    (
        "zoneinfo-no-cache-by-type",
        "import zoneinfo\ntype(zoneinfo.ZoneInfo('UTC')).no_cache('UTC')",
        RUN,
    ),
    ("zoneinfo-write-key", "import zoneinfo\nzoneinfo.ZoneInfo('UTC').key = 'x'", SEC),
    ("zoneinfo-real-class", "import zoneinfo\nzoneinfo.ZoneInfo.__mro__[0].clear_cache()", SEC),
    # Writes to what the host owns
    ("write-facade", "import json\njson.dumps = print", SEC),
    ("setattr-facade", "import math\nsetattr(math, 'pi', 3)", SEC),
    ("write-builtin-type", "str.upper = len", SEC),
    ("write-bound-tool", "add.x = 1", SEC),
    ("print-to-file", "import json\nprint('x', file=json)", RUN),
    # Bound tools expose nothing of the host
    ("tool-private-attr", "add._dispatch", SEC),
    ("tool-private-getattr", "getattr(add, '_dispatch')", SEC),
    # a name the tool's class does not define: CPython's AttributeError, nothing to hide
    ("tool-public-attr", "getattr(add, 'name')", RUN),
    ("tool-public-attr-it-defines", "add.__call__", SEC),
    # A name a library class defines stays hidden where it is not readable: only a name
    # no class defines reads as a misspelling (AttributeError)
    # re's objects hold the engine's one private name away
    ("hidden-name-of-a-library-object", "import re\nre.compile('a')._compiled", SEC),
    ("hidden-name-by-hasattr", "import re\nhasattr(re.compile('a'), '_compiled')", SEC),
    ("hidden-name-of-a-match", "import re\ngetattr(re.match('a', 'a'), '_found')", SEC),
    # a host object's instance dict is read for a public name it lacks, nothing more: what
    # it holds stays hidden, whether a private name is there is not told
    ("host-public-name-in-its-dict", "import csv\ncsv.DictReader([]).reader", SEC),
    ("host-public-name-by-hasattr", "import csv\nhasattr(csv.DictReader([]), 'dialect')", SEC),
    # a dialect class's settings are read, never set: the class is every session's
    ("csv-dialect-class-write", "import csv\ncsv.excel.delimiter = ';'", SEC),
    ("csv-dialect-instance-write", "import csv\ncsv.excel().delimiter = ';'", SEC),
    ("csv-dialect-private", "import csv\ncsv.excel()._valid", SEC),
    ("host-private-name-it-lacks", "import textwrap\nhasattr(textwrap.TextWrapper(), '_x')", SEC),
    # a json decoder keeps its real one away, acts on its own objects, takes no writes
    ("json-decoder-real", "import json\njson.JSONDecoder()._real", SEC),
    (
        "json-decoder-on-another",
        "import json\njson.JSONDecoder.decode(json.JSONEncoder(), '1')",
        SEC,
    ),
    ("json-decoder-write", "import json\njson.JSONDecoder().object_hook = print", SEC),
    (
        "json-decoder-subclass-real",
        "import json\nclass D(json.JSONDecoder):\n    pass\nD()._real",
        SEC,
    ),
    # a wrapper's options are its own; the class's table and patterns are every session's
    (
        "textwrap-shared-table",
        "import textwrap\ntextwrap.TextWrapper().unicode_whitespace_trans",
        SEC,
    ),
    ("textwrap-shared-pattern", "import textwrap\ntextwrap.TextWrapper().wordsep_re", SEC),
    ("textwrap-class-write", "import textwrap\ntextwrap.TextWrapper.width = 5", SEC),
    # fill calls self.wrap, formatweek self.formatday: neither is replaced on an instance
    (
        "textwrap-method-replaced",
        "import textwrap\nw = textwrap.TextWrapper()\nw.wrap = lambda t: ['x']\nw.fill('a b')",
        RUN,
    ),
    (
        "json-encoder-method-replaced",  # iterencode calls self.encode
        "import json\ne = json.JSONEncoder()\ne.encode = lambda o: 'x'\nlist(e.iterencode(1))",
        RUN,
    ),
    (
        "chainmap-method-replaced",  # == calls self.items
        "import collections\ncm = collections.ChainMap({})\ncm.items = lambda: []\ncm == {}",
        RUN,
    ),
    (
        "queue-method-replaced",  # put calls self.full
        "import queue\nq = queue.Queue()\nq.full = lambda: print('mine')\nq.put_nowait(1)",
        RUN,
    ),
    (
        "counter-method-replaced",  # __repr__ calls self.most_common
        "import collections\nc = collections.Counter(a=1)\nc.most_common = lambda *a: []\nrepr(c)",
        RUN,
    ),
    (
        "counter-method-replaced-by-setattr",
        "import collections\nsetattr(collections.Counter(), 'items', lambda: [])",
        RUN,
    ),
    (
        "calendar-method-replaced",
        "import calendar\nc = calendar.TextCalendar()\nc.formatday = lambda *a: 'x'\n"
        "c.formatweek([(1, 0)], 2)",
        RUN,
    ),
    (
        "calendar-width",
        "import calendar\ncalendar.TextCalendar().formatmonth(2024, 1, 10**8)",
        LIMIT,
    ),
    ("calendar-print-width", "import calendar\ncalendar.prmonth(2024, 1, 10**8)", LIMIT),
    (
        "calendar-on-another-object",
        "import calendar\nclass C:\n    firstweekday = 1\n"
        "calendar.Calendar.monthdayscalendar(C(), 2024, 1)",
        SEC,
    ),
    (
        "calendar-object-in-a-week",
        "import calendar\nclass D:\n    pass\ncalendar.TextCalendar().formatweek([(D(), 0)], 2)",
        RUN,
    ),
    ("calendar-private-setting", "import calendar\ncalendar.Calendar()._firstweekday = 3", SEC),
    (
        "html-calendar-class-list",  # the class's CSS names are every session's: a tuple here
        "import calendar\ncalendar.HTMLCalendar.cssclasses.append('x')",
        RUN,
    ),
    (
        "host-property-getter-on-a-script-object",  # fractions' getter would read its _numerator
        "import fractions\nclass S:\n    def __getattr__(self, name):\n        return 1\n"
        "type(fractions.Fraction(1)).numerator.fget(S())",
        SEC,
    ),
    (
        "host-property-setter-on-a-script-object",  # the lexer's setter would write its _real
        "import shlex\nclass S:\n    pass\ntype(shlex.shlex('a')).wordchars.fset(S(), 'ab')",
        SEC,
    ),
    (
        "host-property-getter-of-pathlib",  # its code would index the receiver's parts
        "import pathlib\nclass S:\n    def __getattr__(self, name):\n        return ('a',)\n"
        "type(pathlib.PurePosixPath('a')).name.fget(S())",
        SEC,
    ),
    ("shlex-standard-input", "import shlex\nshlex.shlex().get_token()", RUN),  # CPython's reads it
    ("shlex-source-file", "import shlex\nlex = shlex.shlex('x')\nlex.source = 'source'", RUN),
    ("shlex-debug-print", "import shlex\nlex = shlex.shlex('x')\nlex.debug = 3", RUN),
    ("shlex-real-lexer", "import shlex\nshlex.shlex('x')._real", SEC),
    (
        "shlex-script-stream",  # CPython's would call its readline from the lexer's code
        "import shlex\nclass Stream:\n    def readline(self):\n        return 'a b'\n"
        "    def read(self, n):\n        return 'a'\nshlex.shlex(Stream()).get_token()",
        RUN,
    ),
    (
        "shlex-script-setting",  # the lexer's code would test `c in wordchars` with it
        "import shlex\nclass Chars:\n    def __contains__(self, c):\n        return True\n"
        "lex = shlex.shlex('a b')\nlex.wordchars = Chars()",
        RUN,
    ),
    (
        "html-calendar-class-write",
        "import calendar\ncalendar.HTMLCalendar.cssclass_noday = 'x'",
        SEC,
    ),
    (
        "html-calendar-object-setting",  # a setting reaches calendar's code as plain text
        "import calendar\nh = calendar.HTMLCalendar()\nh.cssclass_noday = [object()]",
        RUN,
    ),
    ("tool-construct", "type(add)('x', (), print)('leak')", SEC),
    ("tool-format", "'{0._dispatch}'.format(add)", SEC),
    ("tool-deepcopy", "import copy\ncopy.deepcopy(add)._dispatch", SEC),
    # A host object's _names are its internals, also where its public ones may be set
    ("host-private-method", "import collections\ncollections.Counter()._keep_positive", SEC),
    (
        "host-private-on-script-subclass",
        "import collections\nclass C(collections.Counter):\n    pass\nC()._keep_positive()",
        SEC,
    ),
    (
        "host-private-class-marker",
        "import collections.abc\nclass M(collections.abc.MutableMapping):\n    pass\n"
        "M._MutableMapping__marker",
        SEC,
    ),
    ("host-private-write", "import queue\nq = queue.Queue()\nq._items = [1]", SEC),
    ("host-private-setattr", "import queue\nsetattr(queue.Queue(), '_items', [])", SEC),
    (
        "host-private-pattern",
        "import queue\nmatch queue.Queue():\n    case object(_items=i):\n        i",
        SEC,
    ),
    # A script's own function carries the public attributes it sets, and nothing more
    ("host-function-attribute", "import json\njson.dumps.x = 1", SEC),
    ("script-function-private", "def f():\n    pass\nf._is_coroutine = True", SEC),
    ("script-function-setattr-dunder", "def f():\n    pass\nsetattr(f, '__code__', None)", SEC),
    ("script-function-globals", "def f():\n    pass\nf.x = 1\ngetattr(f, '__globals__')", SEC),
    # shlex.split(None) reads standard input in CPython: a string only here
    ("shlex-split-none", "import shlex\nshlex.split(None)", RUN),
    ("fnmatch-not-a-string", "import fnmatch\nfnmatch.fnmatch(b'x', b'*')", RUN),
    # the facade classes are every session's: never written
    ("logging-class-write", "import logging\nlogging.StreamHandler.terminator = ''", SEC),
    ("logging-class-setattr", "import logging\nsetattr(logging.Formatter, 'usesTime', len)", SEC),
    # warnings: the session's filters behind its context manager
    ("warnings-session", "import warnings\nwarnings.catch_warnings()._session.filters", SEC),
    (
        "warnings-record-internals",
        "import warnings\nwith warnings.catch_warnings(record=True) as w:\n"
        "    warnings.warn('x')\nw[0].__class__.__init__(w[0], 1, 2, 3)",
        SEC,
    ),
    # logging: a format's widths are checked as a script's own % and strftime are
    (
        "logging-format-width",
        "import logging\nlogging.basicConfig(format='%(message)999999999s')\nlogging.warning('x')",
        LIMIT,
    ),
    (
        "logging-date-width",
        "import logging\nlogging.basicConfig(format='%(asctime)s', datefmt='%9999999Y')\n"
        "logging.warning('x')",
        LIMIT,
    ),
    (
        "logging-brace-width",
        "import logging\nlogging.basicConfig(format='{message:>999999999}', style='{')\n"
        "logging.warning('x')",
        LIMIT,
    ),
    # logging: the session behind a logger, the class that would build one without it
    ("logging-session", "import logging\nlogging.getLogger('a')._session.guards", SEC),
    ("logging-logger-class", "import logging\ntype(logging.root)('x')", SEC),
    (
        "logging-host-method-on-script",
        "import logging\nclass X:\n    pass\nlogging.StreamHandler.setLevel(X(), 10)",
        SEC,
    ),
    (
        "logging-formatter-callback",
        "import logging\nclass F:\n    def _text(self, session, record):\n        return session\n"
        "h = logging.StreamHandler()\nh.formatter = F()",
        RUN,
    ),
    # host Python code handed the script's object: its methods would run from host frames
    (
        "html-calls-script-replace",
        "import html\nclass S:\n    def replace(self, a, b):\n        return a\nhtml.escape(S())",
        RUN,
    ),
    (
        "statistics-sums-script-numbers",
        "import statistics\nclass N:\n    def __float__(self):\n        return 1.0\n"
        "    def __radd__(self, other):\n        return other\nstatistics.fmean([N(), N()])",
        RUN,
    ),
    (
        "template-str-of-script-object",
        "import string\nclass V:\n    def __str__(self):\n        return 'x'\n"
        "string.Template('$a').substitute(a=V())",
        RUN,
    ),
    (
        "random-method-indexes-script-sequence",
        "import random\nclass Seq:\n    def __len__(self):\n        return 1\n"
        "    def __getitem__(self, i):\n        return i\nrandom.Random(1).choice(Seq())",
        RUN,
    ),
]


def _assert_contained(outcome: ScriptOutcome, marker: Path) -> None:
    assert not marker.exists()
    assert SECRET not in repr(outcome)


@pytest.mark.parametrize(("attack", "script", "code"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_is_refused(
    run: Callable[[str], ScriptOutcome], marker: Path, attack: str, script: str, code: str
) -> None:
    modules_before = set(sys.modules)
    outcome = run(script.replace("{marker}", str(marker)))
    assert outcome.error is not None, f"{attack} succeeded: {outcome.value!r}"
    assert outcome.error.code == code, outcome.error
    _assert_contained(outcome, marker)
    assert {"os", "subprocess"} & (set(sys.modules) - modules_before) == set()


@pytest.mark.parametrize(("attack", "script", "code"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_an_attack_given_to_exec_ends_as_it_does_written_out(
    run: Callable[[str], ScriptOutcome], marker: Path, attack: str, script: str, code: str
) -> None:
    """A string is compiled under the script's policy and runs with its guards: every
    attack above, handed to ``exec`` as text, ends the same way and reaches nothing."""
    if "await" in script:  # top-level await is a script's, not a string's (a SyntaxError)
        pytest.skip("exec compiles a module, where await is outside a function")
    text = script.replace("{marker}", str(marker))
    outcome = run(f"exec({text!r})")
    assert outcome.error is not None, f"{attack} succeeded through exec: {outcome.value!r}"
    assert outcome.error.code == code, outcome.error
    _assert_contained(outcome, marker)


def test_a_module_stand_in_holds_no_name_the_interpreter_could_read(
    run: Callable[[str], ScriptOutcome],
) -> None:
    """Scripts read a module's name through the guard; the facades themselves hold none, so
    the interpreter's own ``from m import x``, which reads one to look a submodule up among
    the host's modules (``json.encoder``, ``collections.abc``), finds nothing there."""
    from codeact.stdlib._modules import STATIC_FACADES

    assert STATIC_FACADES
    for facade in STATIC_FACADES.values():
        assert not hasattr(facade, "__name__"), facade
    outcome = run("import collections, os.path\n[collections.__name__, os.path.__name__]")
    assert outcome.value == ["collections", "posixpath"], outcome.error


def test_there_are_at_least_sixty_attacks() -> None:
    assert len(ATTACKS) >= 60


def test_seeding_random_never_touches_the_host_generator(
    run: Callable[[str], ScriptOutcome],
) -> None:
    state = random.getstate()
    outcome = run("import random\nrandom.seed(42)\n[random.random() for _ in range(3)]")
    assert outcome.ok
    assert random.getstate() == state
    again = run("import random\nrandom.seed(42)\n[random.random() for _ in range(3)]")
    assert again.value == outcome.value


def test_a_rigged_str_subclass_reaches_the_tool_as_a_plain_str(
    run: Callable[[str], ScriptOutcome],
) -> None:
    script = (
        "class Sly(str):\n    def __eq__(self, other):\n        return True\nrecord(Sly('hello'))"
    )
    outcome = run(script)
    assert outcome.value == "str"
    assert [type(x) for x in HOST_LOG] == [str]
    assert HOST_LOG == ["hello"]


def test_objects_with_host_side_hooks_cannot_be_passed_to_tools(
    run: Callable[[str], ScriptOutcome],
) -> None:
    outcome = run("class Loud:\n    def __str__(self):\n        return 'x'\nrecord(Loud())")
    assert outcome.error is not None
    assert outcome.error.code == RUN
    assert "not JSON" in outcome.error.message
    assert HOST_LOG == []


def test_mutating_a_tool_result_leaves_the_host_value_alone(
    run: Callable[[str], ScriptOutcome],
) -> None:
    outcome = run("values = shared()\nvalues.append(99)\nvalues[0] = -1\nvalues")
    assert outcome.value == [-1, 2, 3, 99]
    assert SHARED_RESULT == [1, 2, 3]


def test_a_script_object_as_result_becomes_its_repr_inside_the_sandbox(
    run: Callable[[str], ScriptOutcome],
) -> None:
    outcome = run(
        "class Odd:\n    def __repr__(self):\n        return 'Odd!'\n    def __eq__(self, o):\n        return True\nOdd()"
    )
    assert outcome.value == "Odd!"
    assert type(outcome.value) is str


def test_raising_system_exit_leaves_the_host_running(run: Callable[[str], ScriptOutcome]) -> None:
    outcome = run("raise SystemExit(3)")
    assert outcome.error is not None
    assert outcome.error.kind == "SystemExit"
    assert run("'still here'").value == "still here"


def test_a_missing_module_is_an_import_error_the_script_can_catch(
    run: Callable[[str], ScriptOutcome],
) -> None:
    modules_before = set(sys.modules)
    outcome = run(
        "try:\n    import subprocess\nexcept ImportError as e:\n    r = (type(e).__name__, e.name)\nr"
    )
    assert outcome.value == ["ModuleNotFoundError", "subprocess"]
    assert "subprocess" not in set(sys.modules) - modules_before


def test_the_sandbox_never_imports_os_for_a_script(run: Callable[[str], ScriptOutcome]) -> None:
    outcome = run("import datetime\ndatetime.datetime.strptime('2024-03-01', '%Y-%m-%d').month")
    assert outcome.value == 3


def test_re_checks_a_pattern_without_printing_or_warning_in_the_host(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # CPython's parser checks a script's pattern in the host: its DEBUG flag would print
    # the parse to the host's standard output, and its future-syntax warning would go to
    # the host's warnings
    import warnings

    from codeact.stdlib import standard_sandbox

    sandbox = standard_sandbox()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = sandbox.run(
            "import re\n"
            "[re.compile('a(b)', 128 | 1).match('ab').group(1), re.compile('[[x]').pattern]"
        )
    assert [str(w.message) for w in caught] == []
    assert outcome.error is None, outcome.error
    assert outcome.value == ["b", "[[x]"]
    printed = capfd.readouterr()
    assert printed.out == ""
    assert printed.err == ""


def test_a_forwarded_iterator_value_is_plain_and_read_only_from_its_relay() -> None:
    # A csv reader's line_num is read through its relay: the getter answers nothing for
    # another object, and nothing but a plain value for the relay itself
    import csv

    import codeact.stdlib._everyday  # noqa: F401  # the csv facade says what its reader answers
    from codeact.sandbox._work_bounds import _forwarded, ticking

    relay = ticking(csv.reader(["a,b", "c,d"]))
    next(relay)
    assert relay.line_num == 1  # type: ignore[attr-defined]

    class Holder:
        _inner = relay

    getter = _forwarded("line_num").fget
    assert getter is not None
    with pytest.raises(TypeError, match="read from the iterator"):
        getter(Holder())
    with pytest.raises(TypeError, match="not a plain value"):
        _forwarded("dialect").fget(relay)  # type: ignore[misc]


def test_a_json_decoder_subclass_never_stands_in_for_the_real_decoder(
    run: Callable[[str], ScriptOutcome],
) -> None:
    # the real decoder is read from its slot by the slot's own descriptor: a name the
    # script's subclass defines again is the script's, and decoding never reaches it
    outcome = run(
        "import json\n"
        "class Forged:\n"
        "    def decode(self, s):\n"
        "        return 'forged'\n"
        "class D(json.JSONDecoder):\n"
        "    _real = Forged()\n"
        "d = D()\n"
        "[d.decode('[1]'), d.raw_decode('[2] x'), d._real.decode('')]"
    )
    assert outcome.error is None, outcome.error
    assert outcome.value == [[1], [[2], 3], "forged"]
