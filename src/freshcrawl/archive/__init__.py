"""The copies a crawl keeps: WARC/1.1 files with revisit records and their CDXJ indexes
(:class:`WarcArchive`, :mod:`freshcrawl.archive.warc`), or only the latest copy of each page
(:class:`LatestCopies`, :mod:`freshcrawl.archive.latest`); a page's captures and diffs are read by
:mod:`freshcrawl.archive.history`. Needs the ``warc`` extra (warcio, cdxj-indexer).
"""

from freshcrawl.archive.latest import LatestCopies
from freshcrawl.archive.warc import (
    DEFAULT_MAX_FILE_BYTES,
    PROFILE_IDENTICAL,
    PROFILE_NOT_MODIFIED,
    StoredRecord,
    WarcArchive,
    payload_digest,
    recover_open_file,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "PROFILE_IDENTICAL",
    "PROFILE_NOT_MODIFIED",
    "LatestCopies",
    "StoredRecord",
    "WarcArchive",
    "payload_digest",
    "recover_open_file",
]
