"""Worker folders: made for each worker, removed by a path that cannot be skipped.

A worker's folder is its only writable place. Removing it must not depend on the host
having descriptors to spare (listing a folder takes one), on the folder still being a
folder, or on the host living on: what cannot be removed now is remembered and retried
by every later sweep, and a sweep also removes the folders of hosts that died and those
of this host that no live worker owns.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading

FOLDER_PREFIX = "codeact-worker-"

_lock = threading.Lock()
_live: set[str] = set()  # folders of this process's workers that are still in use
_leftovers: set[str] = set()  # folders whose removal failed: retried by every sweep


def new_folder() -> str:
    """A fresh private folder for one worker, named after this host's process id."""
    with _lock:  # made and filed at once: a sweep in another thread never takes it
        folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        _live.add(folder)
    return folder


def remove_folder(folder: str) -> bool:
    """Remove a worker's folder now if possible, else at the next sweep; True once gone."""
    with _lock:
        _live.discard(folder)
    if _removed(folder):
        with _lock:
            _leftovers.discard(folder)
        return True
    with _lock:
        _leftovers.add(folder)
    return False


def _removed(path: str) -> bool:
    with contextlib.suppress(OSError):
        os.rmdir(path)  # the usual case, an empty folder: needs no descriptor
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)  # lists the folder: needs descriptors
    elif os.path.lexists(path):  # the folder was replaced by a file or a link
        with contextlib.suppress(OSError):
            os.unlink(path)
    return not os.path.lexists(path)


def sweep_stale_folders(root: str | None = None) -> list[str]:
    """Remove what is left of workers: folders of hosts that are gone (killed before they
    could clean up), this host's folders that no live worker owns, and earlier removals
    that failed. Returns the names removed."""
    root = root or tempfile.gettempdir()
    with _lock:
        retry = list(_leftovers)
    removed = [os.path.basename(path) for path in retry if remove_folder(path)]
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    me = os.getpid()
    for name in names:
        if not name.startswith(FOLDER_PREFIX):
            continue
        owner = name[len(FOLDER_PREFIX) :].partition("-")[0]
        path = os.path.join(root, name)
        if not owner.isdigit():
            continue
        with _lock:
            in_use = path in _live
        orphan = (int(owner) == me and not in_use) or (
            int(owner) != me and not _process_exists(int(owner))
        )
        if orphan and remove_folder(path):
            removed.append(name)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["FOLDER_PREFIX", "new_folder", "remove_folder", "sweep_stale_folders"]
