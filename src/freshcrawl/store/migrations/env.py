"""Alembic environment of the crawl store: runs on the connection the store hands over."""

from __future__ import annotations

from alembic import context

from freshcrawl.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - the store always passes its connection
    raise RuntimeError("freshcrawl's migrations run through freshcrawl.store.open_store()")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
