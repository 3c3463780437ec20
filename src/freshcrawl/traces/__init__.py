"""Files: change histories, visit logs and the tables of ``freshcrawl allocate``.

- :func:`read_history` reads a change history (``PREFIX.changes.csv.gz`` and ``PREFIX.pages.csv``, the
  format of ``data/``) into a :class:`ChangeHistory`, times in days since the unix epoch.
- :func:`read_visit_log` / :func:`write_visit_log` read and write visit logs (``page,time,changed``).
- :func:`read_pages` and :func:`read_host_caps` read the PAGES (``page,delta[,weight,host,complete]``)
  and HOSTS (``host,max_rate``) tables; :func:`host_index` maps host names to the host indices and caps
  that :func:`freshcrawl.allocation.allocate` takes.

Every reader names the file, the row and the column of a value it cannot read.
"""

from freshcrawl.traces.history import ChangeHistory, read_history
from freshcrawl.traces.tables import host_index, read_host_caps, read_pages
from freshcrawl.traces.visit_log import VisitLog, read_visit_log, write_visit_log

__all__ = [
    "ChangeHistory",
    "read_history",
    "VisitLog",
    "read_visit_log",
    "write_visit_log",
    "read_pages",
    "read_host_caps",
    "host_index",
]
