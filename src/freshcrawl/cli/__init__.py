"""The ``freshcrawl`` command line.

Subcommands live in their own modules and are imported only when invoked, so ``freshcrawl --help``
stays fast and one command's heavy imports never slow another.
"""

from __future__ import annotations

import importlib

import click

__all__ = ["EXTRA_OF_MODULE", "main", "missing_extra"]

#: The optional extra that provides each top-level module the core install lacks
#: (``pip install "freshcrawl[<extra>]"``); see ``[project.optional-dependencies]``.
EXTRA_OF_MODULE: dict[str, str] = {
    **dict.fromkeys(
        [
            "aiohttp",
            "idna",
            "protego",
            "tenacity",
            "trafilatura",
            "lxml",
            "lxml_html_clean",
            "yarl",
            "sqlalchemy",
            "alembic",
            "psycopg",
            "psycopg_binary",
            "usp",
            "feedparser",
        ],
        "crawl",
    ),
    **dict.fromkeys(
        ["fastapi", "starlette", "pydantic", "uvicorn", "prometheus_client", "grpc", "google"],
        "serve",
    ),
    **dict.fromkeys(["dask", "distributed"], "dask"),
    **dict.fromkeys(["warcio", "cdxj_indexer", "apprise"], "warc"),
    **dict.fromkeys(["scrapy", "twisted"], "scrapy"),
}


def missing_extra(err: BaseException) -> tuple[str, str] | None:
    """The extra whose absence caused `err`, and the missing module; ``None`` if no extra provides it.

    Parameters
    ----------
    err : BaseException
        An import failure, or an error raised from one (its ``__cause__`` and ``__context__`` are
        followed); the ``name`` of an ``ImportError`` is the module that could not be imported
        (``"sqlalchemy.exc"`` counts as ``"sqlalchemy"``).

    Returns
    -------
    (str, str) or None
        The extra (``"crawl"``, ``"serve"`` or ``"dask"``, from :data:`EXTRA_OF_MODULE`) and the
        top-level module that is missing.

    Examples
    --------
    >>> missing_extra(ModuleNotFoundError("No module named 'grpc'", name="grpc"))
    ('serve', 'grpc')
    >>> missing_extra(ModuleNotFoundError("No module named 'foo'", name="foo")) is None
    True
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = getattr(current, "name", None) if isinstance(current, ImportError) else None
        if name and name.split(".")[0] in EXTRA_OF_MODULE:
            top = name.split(".")[0]
            return EXTRA_OF_MODULE[top], top
        current = current.__cause__ or current.__context__
    return None


class LazyGroup(click.Group):
    """A click group whose subcommands are ``"module:attribute"`` strings, imported on first use.

    ``lazy_help`` gives the one-line help listed by ``--help`` for such a subcommand, so that listing
    them imports none.
    """

    def __init__(
        self,
        *args,
        lazy_subcommands: dict[str, str] | None = None,
        lazy_help: dict[str, str] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})
        self.lazy_help = dict(lazy_help or {})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy_help:
                rows.append((name, self.lazy_help[name]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_subcommands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            module_name, attr = self.lazy_subcommands[cmd_name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context):
        """Run the subcommand. A database that cannot be used ends it with its one-line error, and a
        module of a missing extra with one line naming the extra."""
        from freshcrawl.errors import (
            CorruptDatabaseError,
            DatabaseInUseError,
            DatabaseUnavailableError,
        )

        try:
            return super().invoke(ctx)
        except (DatabaseUnavailableError, CorruptDatabaseError, DatabaseInUseError) as err:
            raise click.ClickException(str(err)) from err
        except ImportError as err:
            found = missing_extra(err)
            if found is None:
                raise
            extra, module = found
            command = ctx.invoked_subcommand or "this command"
            click.echo(
                f"Error: freshcrawl {command} needs the {extra!r} extra ({module} is not "
                f'installed): pip install "freshcrawl[{extra}]"',
                err=True,
            )
            ctx.exit(1)


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
    lazy_help={
        "allocate": "Compute visit rates that maximise an objective under a budget.",
        "crawl": "Keep real URLs fresh: learn change rates and crawl politely.",
        "estimate": "Estimate each page's change rate from a visit log.",
        "experiments": "Regenerate the seed papers' experiments as plots and tables.",
        "partition": "Repartition a Parquet file or directory by host or page.",
        "serve": "Serve a crawl database's frontier to crawlers (REST, gRPC).",
        "simulate": "Replay a change history and compare recrawl policies.",
        "test-web": "Serve a test web on loopback: pages that change at known rates.",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="freshcrawl")
def main() -> None:
    """freshcrawl: learn how often pages change and spend a crawl budget where it keeps them fresh."""
