"""``freshcrawl experiments ...``: reproduce the figures of the seed papers."""

from __future__ import annotations

import click

from freshcrawl.cli import LazyGroup

__all__ = ["experiments"]


@click.group(
    cls=LazyGroup,
    lazy_subcommands={
        "estimators": "freshcrawl.cli.exp_estimators:estimators",
        "sync-bandits": "freshcrawl.cli.exp_sync_bandits:sync_bandits",
        "automata": "freshcrawl.cli.exp_automata:automata",
    },
)
def experiments() -> None:
    """Regenerate the experiments of the seed papers as PNG plots and CSV tables."""
