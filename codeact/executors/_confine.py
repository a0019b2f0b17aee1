"""Kernel confinement of a worker process: the boundary that holds when the interpreter's does not.

A worker confines itself once, after its imports and before its first script, in
this order (each layer is reported, so a deployment can see what it has):

1. a network namespace of its own (no interfaces but a downed loopback), when permitted;
2. an unprivileged uid and gid with no supplementary groups, when started as root;
3. a parent-death signal, so a worker never outlives its host;
4. ``no_new_privs``, which Landlock and seccomp need and which nothing undoes;
5. Landlock: read-only access beneath the directories the interpreter was loaded
   from, read-write beneath its own folder, nothing else on the filesystem; no TCP
   bind or connect; no signals to processes outside its domain;
6. seccomp: the system calls a pure interpreter never makes fail with ``EPERM``
   (see ``DENIED_SYSCALLS``).

Other platforms get a report that says each layer is unavailable, and why.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import importlib
import os
import signal
import site
import sys
import sysconfig
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

Confinement = Literal["require", "best-effort", "off"]
UNPRIVILEGED_ID = 65534  # nobody / nogroup

# System calls a worker never needs, and what each would give an escaped script.
DENIED_SYSCALLS: dict[str, str] = {
    "execve": "start another program",
    "execveat": "start another program",
    "fork": "start a process",
    "vfork": "start a process",
    "ptrace": "trace or poke another process",
    "process_vm_readv": "read another process's memory",
    "process_vm_writev": "write another process's memory",
    "socket": "open a network or local socket",
    "socketpair": "open a local socket pair",
    "mount": "change the filesystem tree",
    "umount2": "change the filesystem tree",
    "pivot_root": "change the filesystem root",
    "chroot": "change the filesystem root",
    "unshare": "leave its namespaces",
    "setns": "join another process's namespaces",
    "keyctl": "reach the kernel keyrings",
    "add_key": "reach the kernel keyrings",
    "request_key": "reach the kernel keyrings",
    "bpf": "load kernel programs",
    "perf_event_open": "observe other processes",
    "userfaultfd": "stall the kernel on page faults (a known exploit aid)",
    "io_uring_setup": "issue system calls the filter never sees",
    "init_module": "load a kernel module",
    "finit_module": "load a kernel module",
    "delete_module": "unload a kernel module",
    "kexec_load": "replace the kernel",
    "reboot": "reboot the machine",
    "swapon": "change swap",
    "swapoff": "change swap",
    "acct": "turn on process accounting",
    "settimeofday": "set the clock",
    "clock_settime": "set the clock",
    "open_by_handle_at": "open files by handle, around path checks",
    "name_to_handle_at": "open files by handle, around path checks",
    "setuid": "change its identity",
    "setgid": "change its identity",
    "setreuid": "change its identity",
    "setregid": "change its identity",
    "setresuid": "change its identity",
    "setresgid": "change its identity",
    "setgroups": "change its identity",
    "personality": "change how the kernel treats it",
}
# What the template keeps of those: the workers it forks drop to an unprivileged user and
# may enter a network namespace of their own before they confine themselves.
TEMPLATE_NEEDS = frozenset(
    {"unshare", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups"}
)
# Signals and thread creation are allowed only towards the worker itself (see _seccomp).
SELF_ONLY_SYSCALLS = ("kill", "tkill", "tgkill", "clone")

# Landlock (include/uapi/linux/landlock.h).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 2, 1 << 3
_FS_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_FS_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG = 38, 1
_CLONE_NEWNET, _CLONE_THREAD = 0x40000000, 0x00010000
# Files outside the interpreter's own folders that ordinary library code reads.
_EXTRA_READABLE = ("/etc/localtime", "/usr/share/zoneinfo")


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


@dataclass(kw_only=True)
class ConfinementReport:
    """Which layers a worker runs under; ``missing`` says why a layer is not there."""

    active: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_json(self) -> dict[str, dict[str, str]]:
        return {"active": dict(self.active), "missing": dict(self.missing)}

    @classmethod
    def from_json(cls, data: Any) -> ConfinementReport:
        """A worker's report as it sent it; ValueError unless it has the exact shape."""
        if type(data) is not dict:
            raise ValueError("a confinement report is an object")
        return cls(active=_layers(data.get("active", {})), missing=_layers(data.get("missing", {})))

    def describe(self) -> str:
        lines = [f"  on   {name}: {detail}" for name, detail in self.active.items()]
        lines += [f"  off  {name}: {reason}" for name, reason in self.missing.items()]
        return "\n".join(lines)


def _layers(data: Any) -> dict[str, str]:
    if type(data) is not dict or len(data) > 32:
        raise ValueError("layers are a small object")
    if not all(type(v) is str and len(k) + len(v) < 1_000 for k, v in data.items()):
        raise ValueError("each layer is described by a short text")
    return dict(data)


# Layers that `require` insists on; the network namespace and the uid change are extras
# that need privileges a host may not have (Landlock and seccomp already close both).
REQUIRED_LAYERS = ("no_new_privs", "landlock", "seccomp", "parent_death_signal")


def confine(
    *, workdir: str, user: int | None = UNPRIVILEGED_ID, readable: Iterable[str] = ()
) -> ConfinementReport:
    """Confine this process for good; what could not be applied is in ``missing``."""
    report = ConfinementReport()
    if not sys.platform.startswith("linux"):
        reason = f"kernel confinement is implemented for Linux, not {sys.platform}"
        for layer in ("network_namespace", "user", *REQUIRED_LAYERS):
            report.missing[layer] = reason
        return report
    if threading.active_count() != 1:  # Landlock and no_new_privs bind the calling thread only
        raise RuntimeError("a worker must confine itself before it starts any thread")
    libc = ctypes.CDLL(None, use_errno=True)
    seccomp = load_seccomp()  # before the worker loses the right to read its libraries
    parent = os.getppid()
    paths = _interpreter_paths(readable)
    _layer(report, "network_namespace", lambda: _new_network_namespace(libc))
    _layer(report, "no_new_privs", lambda: _no_new_privs(libc))
    _layer(report, "landlock", lambda: _landlock(libc, paths, workdir))
    _layer(report, "user", lambda: _drop_user(workdir, user))  # after Landlock opened its paths
    _layer(report, "parent_death_signal", lambda: _parent_death_signal(libc, parent))
    _layer(report, "seccomp", lambda: _seccomp(seccomp))  # last: it refuses the uid change
    return report


def confine_template() -> ConfinementReport:
    """Confine the template workers are forked from, as far as a fork server can be:
    ``no_new_privs`` and a filter that refuses what neither it nor a starting worker needs
    (programs, sockets, tracing, kernel objects). Its children inherit both."""
    report = ConfinementReport()
    if not sys.platform.startswith("linux"):
        reason = f"kernel confinement is implemented for Linux, not {sys.platform}"
        report.missing.update({"no_new_privs": reason, "seccomp": reason})
        return report
    libc = ctypes.CDLL(None, use_errno=True)
    seccomp = load_seccomp()
    denied = [name for name in DENIED_SYSCALLS if name not in TEMPLATE_NEEDS]
    _layer(report, "no_new_privs", lambda: _no_new_privs(libc))
    _layer(report, "seccomp", lambda: _seccomp(seccomp, denied, processes=True))
    return report


def _layer(report: ConfinementReport, name: str, apply: Any) -> None:
    try:
        detail = apply()
    except OSError as error:
        report.missing[name] = error.strerror or str(error)
    except (ImportError, RuntimeError, ValueError) as error:
        report.missing[name] = str(error)
    else:
        report.active[name] = detail


def _check(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _new_network_namespace(libc: ctypes.CDLL) -> str:
    _check(libc.unshare(_CLONE_NEWNET))
    return "no network interfaces"


def _drop_user(workdir: str, user: int | None) -> str:
    if os.geteuid() != 0:
        return f"runs as uid {os.geteuid()} (not root)"
    if user is None:
        raise RuntimeError("the host runs as root and no unprivileged user was configured")
    os.chown(workdir, user, user)
    os.setgroups([])
    os.setresgid(user, user, user)
    os.setresuid(user, user, user)
    return f"uid {user}, gid {user}, no supplementary groups"


def _parent_death_signal(libc: ctypes.CDLL, parent: int) -> str:
    # Set after the uid change: a change of credentials clears it.
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
    if os.getppid() != parent:  # the host died before the signal was armed
        os._exit(1)
    return "SIGKILL when the host exits"


def _no_new_privs(libc: ctypes.CDLL) -> str:
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    return "set"


def _interpreter_paths(extra: Iterable[str]) -> list[str]:
    """What the interpreter was loaded from, exactly: its prefixes and standard library,
    the folders of the packages it imported, and the shared libraries it mapped.

    Not every ``sys.path`` entry: the working tree a package is developed in stays out,
    only the package folders themselves are in.
    """
    found = _FOUND
    if not found:
        found.update({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
        found.update(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib"))
        found.update(site.getsitepackages())
        found.add(os.path.dirname(os.path.realpath(sys.executable)))
        found.update(_EXTRA_READABLE)
    for name, module in list(sys.modules.items()):
        if name in _SEEN_MODULES:
            continue
        _SEEN_MODULES.add(name)
        location = getattr(module, "__file__", None)
        if isinstance(location, str):
            package = sys.modules.get(module.__name__.partition(".")[0])
            origin = getattr(package, "__file__", None) or location
            found.add(os.path.dirname(origin) if origin.endswith("__init__.py") else origin)
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            mapped = parts[5].strip() if len(parts) == 6 else ""
            if mapped.startswith("/") and mapped not in _SEEN_MAPPED:
                _SEEN_MAPPED.add(mapped)
                if os.path.isfile(mapped):  # not memfd:, not deleted
                    found.add(os.path.dirname(mapped))
    real = {_real_path(p) for p in (*found, *extra)}
    # Never a top-level folder whole (``/``, ``/usr``, ``/root``): a rule covers all below it.
    return sorted(p for p in real if os.path.exists(p) and p.count("/") >= 2)


# Resolved once in the template and inherited by every worker forked from it: a worker
# then looks only at what it loaded after the fork (modules and mappings by name, each path
# resolved once), not again at the thousand modules and mappings the template had.
_FOUND: set[str] = set()
_SEEN_MODULES: set[str] = set()
_SEEN_MAPPED: set[str] = set()
_REAL_PATHS: dict[str, str] = {}


def _real_path(path: str) -> str:
    real = _REAL_PATHS.get(path)
    if real is None:
        real = _REAL_PATHS[path] = os.path.realpath(path)
    return real


def resolve_interpreter_paths() -> None:
    """Resolve what the interpreter was loaded from now, for the workers forked later."""
    _interpreter_paths(())


def _landlock(libc: ctypes.CDLL, readable: list[str], workdir: str) -> str:
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    if abi < 0:
        code = ctypes.get_errno()
        raise OSError(code, "Landlock is not available: " + os.strerror(code))
    handled_fs = _FS_ALL_BY_ABI[max(k for k in _FS_ALL_BY_ABI if k <= abi)]
    attr = _RulesetAttr(
        handled_access_fs=handled_fs,
        handled_access_net=(_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
        scoped=(_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _check(syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0))
    try:
        for path in readable:
            _allow(syscall, ruleset, path, _FS_READ)
        _allow(syscall, ruleset, workdir, handled_fs)
        _check(syscall(_SYS_RESTRICT_SELF, ruleset, 0))
    finally:
        os.close(ruleset)
    layers = ["filesystem"] + (["tcp"] if abi >= 4 else []) + (["signals"] if abi >= 6 else [])
    return f"ABI {abi}: {', '.join(layers)}; read-only {len(readable)} folders, read-write its own"


def _allow(syscall: Any, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder that is gone needs no rule
    try:
        if not os.path.isdir(path):
            access &= _FS_EXECUTE | _FS_READ_FILE | (1 << 1) | (1 << 14) | (1 << 15)
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        _check(syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0))
    finally:
        os.close(fd)


# The libraries pyseccomp looks up by short name, by the sonames the dynamic loader knows.
_SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def load_seccomp() -> Any:
    """pyseccomp, or the error that kept it from loading.

    On import it asks ``ctypes.util.find_library`` for libc and libseccomp, which runs
    ``ldconfig -p`` for each: two processes and about 20 ms of a template's start, the
    path of a host's first script. Meanwhile each short name is answered by its soname
    when the dynamic loader opens it (what ldconfig's cache would have named); any other
    name, or a soname the loader cannot open, is looked up as before. Where ``ctypes.util``
    is not imported yet, it is not imported for this: it imports ``shutil``, ``tempfile``
    and ``subprocess``, a tenth of a template's imports; a stand-in answers for it while
    pyseccomp loads, and the module itself is loaded only if a name needs its lookup.
    Called where one thread runs (a template; a worker before it starts any), so no other
    import can meet the stand-in.
    """
    loaded = sys.modules.get("ctypes.util")
    stand_in = types.ModuleType("ctypes.util") if loaded is None else None

    def real_lookup(name: str) -> str | None:
        if stand_in is not None and sys.modules.get("ctypes.util") is stand_in:
            del sys.modules["ctypes.util"]  # the real module, from here on
        return importlib.import_module("ctypes.util").find_library(name)  # type: ignore[no-any-return]

    def by_soname(name: str) -> str | None:
        soname = _SONAMES.get(name)
        if soname is not None:
            with contextlib.suppress(OSError):
                ctypes.CDLL(soname)
                return soname
        return real_lookup(name)

    if stand_in is None:
        util: Any = loaded
        look_up = util.find_library
        util.find_library = by_soname
    else:
        stand_in.find_library = by_soname  # type: ignore[attr-defined]
        sys.modules["ctypes.util"] = stand_in
        ctypes.util = stand_in  # type: ignore[attr-defined]  # what `import ctypes.util` reads
    try:
        import pyseccomp
    except (ImportError, OSError) as error:  # a core dependency on Linux; libseccomp may be gone
        return error
    finally:
        if stand_in is None:
            util.find_library = look_up
        else:
            if sys.modules.get("ctypes.util") is stand_in:
                del sys.modules["ctypes.util"]
            if getattr(ctypes, "util", None) is stand_in:
                del ctypes.util  # type: ignore[attr-defined]
    return pyseccomp


def _seccomp(
    pyseccomp: Any, names: Iterable[str] = DENIED_SYSCALLS, *, processes: bool = False
) -> str:
    """Load a filter that refuses ``names``; unless ``processes`` (the template, which
    forks), signals and new tasks stay within this process as well."""
    if isinstance(pyseccomp, BaseException):
        raise ImportError(f"pyseccomp (libseccomp) is not available: {pyseccomp}")
    denied = pyseccomp.ERRNO(errno.EPERM)
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    names = list(names)
    for name in names:
        with contextlib.suppress(RuntimeError, OSError, ValueError):  # absent on this arch
            rules.add_rule(denied, name)
    if processes:
        rules.load()
        return f"{len(names)} system calls filtered"
    me = os.getpid()
    for name in ("kill", "tkill"):
        rules.add_rule(denied, name, pyseccomp.Arg(0, pyseccomp.NE, me))
    rules.add_rule(denied, "tgkill", pyseccomp.Arg(0, pyseccomp.NE, me))
    # Threads yes (the watchdog is one), processes no: clone without CLONE_THREAD fails.
    rules.add_rule(denied, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, _CLONE_THREAD, 0))
    # clone3 hides its flags behind a pointer: refuse it so the C library falls back to clone.
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.set_attr(pyseccomp.Attr.CTL_TSYNC, 1)
    rules.load()
    return f"{len(names) + len(SELF_ONLY_SYSCALLS) + 1} system calls filtered"


__all__ = [
    "DENIED_SYSCALLS",
    "REQUIRED_LAYERS",
    "UNPRIVILEGED_ID",
    "Confinement",
    "ConfinementReport",
    "confine",
    "confine_template",
    "resolve_interpreter_paths",
]
