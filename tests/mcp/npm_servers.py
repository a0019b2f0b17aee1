"""Third-party MCP servers from the npm registry, installed by the tests themselves.

Each package is installed once per machine into a cache folder (``npm install`` of a
pinned version) and started with the machine's Node.js. A test that needs one skips,
saying why, only where Node.js is missing or the registry cannot be reached.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from tests.hosts import machine_lock

PACKAGES = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/inspector": "0.15.0",
}
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codeact-tests"
INSTALL_TIMEOUT_SECONDS = 300


def npm_server(package: str, *args: str) -> StdioServerParameters:
    """Start parameters for ``package`` (installed now if need be), or a skip."""
    node, folder = installed(package)
    return StdioServerParameters(command=node, args=[str(folder / "dist" / "index.js"), *args])


def installed(package: str) -> tuple[str, Path]:
    """Node.js and the folder of ``package`` at its pinned version, installed if need be."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not installed on this machine")
    version = PACKAGES[package]
    folder = CACHE / f"npm-{package.replace('/', '-').lstrip('@')}-{version}"
    package_folder = folder / "node_modules" / package
    with machine_lock("npm"):  # one test process installs; the others wait, then find it
        if not (package_folder / "package.json").exists():
            _install(npm, package, version, folder)
    return node, package_folder


def _install(npm: str, package: str, version: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder)]
    try:
        subprocess.run(
            [*command, f"{package}@{version}"],
            check=True,
            capture_output=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        output = (getattr(error, "stderr", b"") or b"").decode(errors="replace")
        pytest.skip(f"the npm registry could not be reached to install {package}: {output[-300:]}")
