"""argparse as the command line wants it: a bad flag shows the command's usage, a bad value
is one line, both exit 2; a reader that closes the pipe early ends the command quietly."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

EXIT_USAGE = 2

# What argparse says when the shape of the command line is wrong (the usage helps);
# anything else is a value that is wrong, said in one line.
_SHAPE = ("unrecognized arguments", "the following arguments are required", "argument command:")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        if message.startswith(_SHAPE):
            self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def positive(kind: Callable[[str], float]) -> Callable[[str], Any]:
    """An argparse type: a number above 0."""
    return _bounded(kind, lambda value: value > 0, "above 0")


def non_negative(kind: Callable[[str], float]) -> Callable[[str], Any]:
    """An argparse type: a number of 0 or more."""
    return _bounded(kind, lambda value: value >= 0, "0 or more")


def _bounded(
    kind: Callable[[str], float], holds: Callable[[float], bool], wanted: str
) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not holds(value):  # NaN holds nothing
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {text}")
        return value

    return parse


def quiet_on_closed_pipe(command: Callable[[], int]) -> int:
    """Run ``command``; when stdout's reader has gone (``codeact schemas | head``), stop
    writing and leave without a traceback."""
    try:
        code = command()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the exit-time flush writes nowhere
        os.close(devnull)
        return 0


__all__ = ["EXIT_USAGE", "Parser", "positive", "quiet_on_closed_pipe"]
