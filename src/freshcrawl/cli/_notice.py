"""A notice on the terminal while numba compiles the kernels of a first use."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

import click

__all__ = ["compile_notice"]


@contextmanager
def compile_notice(what: str) -> Iterator[None]:
    """While the block runs, say once on stderr that numba is compiling ``what``, if stderr is a terminal.

    numba reports every compilation that misses its on-disk cache as a ``numba:compile`` event
    (``numba.core.event``); a run whose kernels are all cached, and any run whose stderr is a file or a
    pipe, prints nothing.
    """
    if not sys.stderr.isatty():
        yield
        return
    from numba.core import event

    class _Once(event.Listener):
        said = False

        def on_start(self, ev: event.Event) -> None:
            if not self.said:
                self.said = True
                click.echo(f"compiling {what}: first use after install, cached for the next runs ...",
                           err=True)

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Once()):
        yield
