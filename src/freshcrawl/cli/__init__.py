"""The ``freshcrawl`` command line.

Subcommands live in their own modules and are imported only when invoked, so ``freshcrawl --help``
stays fast and one command's heavy imports never slow another.
"""

from __future__ import annotations

import importlib

import click

__all__ = ["main"]


class LazyGroup(click.Group):
    """A click group whose subcommands are ``"module:attribute"`` strings, imported on first use."""

    def __init__(self, *args, lazy_subcommands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_subcommands))

    def invoke(self, ctx: click.Context):
        """Run the command; a database that cannot be used ends it with its one-line error."""
        from freshcrawl.errors import (
            CorruptDatabaseError,
            DatabaseInUseError,
            DatabaseUnavailableError,
        )

        try:
            return super().invoke(ctx)
        except (DatabaseUnavailableError, CorruptDatabaseError, DatabaseInUseError) as err:
            raise click.ClickException(str(err)) from err

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            module_name, attr = self.lazy_subcommands[cmd_name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    lazy_subcommands={
        "estimate": "freshcrawl.cli.estimate:estimate",
        "allocate": "freshcrawl.cli.allocate:allocate",
        "partition": "freshcrawl.cli.partition:partition",
        "simulate": "freshcrawl.cli.simulate:simulate",
        "experiments": "freshcrawl.cli.experiments:experiments",
        "crawl": "freshcrawl.cli.crawl:crawl",
        "test-web": "freshcrawl.cli.testweb:test_web",
        "serve": "freshcrawl.cli.serve:serve",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="freshcrawl")
def main() -> None:
    """freshcrawl: learn how often pages change and spend a crawl budget where it keeps them fresh."""
