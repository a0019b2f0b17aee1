"""The version, in a module of its own: the tracer names it and nothing it needs is loaded."""

__version__ = "0.1.0"
