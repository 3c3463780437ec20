"""The copies a crawl keeps: WARC/1.1 files with revisit records, and their CDXJ indexes.

:class:`WarcArchive` writes them (:mod:`freshcrawl.archive.warc`). Needs the ``warc`` extra
(warcio, cdxj-indexer).
"""

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
    "StoredRecord",
    "WarcArchive",
    "payload_digest",
    "recover_open_file",
]
