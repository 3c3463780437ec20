"""Change notifications through Apprise: one message per change a crawl detects.

:class:`ChangeNotifier` takes the committed outcomes of a crawl (``changed`` observations of the
pages it watches), builds a message (the URL, the time, the size of the change and the first lines
of the diff when the crawl keeps copies) and sends it to Apprise URLs (``json://``, ``mailto://``,
``slack://``, ``matrix://``..., the notation changedetection.io users know) from a worker thread.
A failed send is logged and retried with exponential back-off (``retry_base_s`` · 2^k, at most
``max_attempts`` sends); nothing a notification does can stop the crawl or undo an observation.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from freshcrawl.crawler.outcome import FetchOutcome, Outcome

__all__ = ["ChangeNotifier", "NotifyingFrontier"]

log = logging.getLogger("freshcrawl.notify")

#: Lines of the diff put in a message.
DIFF_LINES = 20


@dataclass(frozen=True, slots=True)
class _Message:
    targets: tuple[str, ...]
    title: str
    body: str


class ChangeNotifier:
    """Send one Apprise message per detected change, in the background, with retries.

    Parameters
    ----------
    all_pages : sequence of str
        Apprise URLs told of a change on any page (``crawl run --notify``).
    per_page : dict of str to list of str, optional
        Apprise URLs told of a change on one page (``crawl add --notify``), by page URL.
    describe : callable, optional
        ``describe(url, out)``, called when the change is committed, returns a callable that the
        worker thread calls to get ``(size, diff)``: the size of the change (a short text) and its
        diff, read from the crawl's copies (so the crawl does not wait for the reading and the text
        extraction); None sends the URL and time only.
    retry_base_s : float, default=1.0
        First back-off after a failed send, seconds; doubled after each failure.
    max_attempts : int, default=5
        Sends tried per message before it is dropped (and logged).

    Raises
    ------
    ImportError
        If apprise (the ``warc`` extra) is not installed.
    ValueError
        If an Apprise URL is not one Apprise knows.
    """

    def __init__(
        self,
        all_pages: Sequence[str] = (),
        per_page: dict[str, list[str]] | None = None,
        *,
        describe: Callable[[str, FetchOutcome], Callable[[], tuple[str, str]]] | None = None,
        retry_base_s: float = 1.0,
        max_attempts: int = 5,
    ) -> None:
        import apprise

        self.all_pages = tuple(all_pages)
        self.per_page = {k: tuple(v) for k, v in (per_page or {}).items()}
        for target in {*self.all_pages, *(t for v in self.per_page.values() for t in v)}:
            if apprise.Apprise.instantiate(target) is None:
                raise ValueError(f"not an Apprise URL Apprise can use: {target!r}")
        self.describe = describe
        self.retry_base_s = float(retry_base_s)
        self.max_attempts = int(max_attempts)
        self.counts = {"queued": 0, "sent": 0, "failed_attempts": 0, "dropped": 0}
        self._queue: queue.Queue[tuple | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="notify", daemon=True)
        self._thread.start()

    def watches(self, url: str) -> tuple[str, ...]:
        """The Apprise URLs told of a change on `url`."""
        return self.all_pages + self.per_page.get(url, ())

    def changed(self, url: str, out: FetchOutcome) -> None:
        """Queue the message of a change on `url` (its committed outcome `out`); never raises."""
        targets = self.watches(url)
        if not targets:
            return
        try:
            later = self.describe(url, out) if self.describe is not None else None
        except Exception as err:  # noqa: BLE001 - a diff that cannot be located still gets a message
            log.warning("notify: no diff for %s: %s", url, err)
            later = None
        self._queue.put((targets, url, out.started_at, later))
        self.counts["queued"] += 1

    @staticmethod
    def _message(targets, url: str, started_at: float, later) -> _Message:
        try:
            size, diff = later() if later is not None else ("", "")
        except Exception as err:  # noqa: BLE001 - a diff that cannot be read still gets a message
            log.warning("notify: no diff for %s: %s", url, err)
            size, diff = "", ""
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started_at))
        lines = diff.splitlines()
        body = f"{url} changed at {when}."
        if size:
            body += f" {size}."
        if lines:
            shown = lines[:DIFF_LINES]
            more = len(lines) - len(shown)
            body += "\n\n" + "\n".join(shown) + (f"\n... ({more} more lines)" if more > 0 else "")
        return _Message(targets, f"Changed: {url}", body)

    def _send(self, msg: _Message) -> bool:
        import apprise

        sender = apprise.Apprise()
        for target in msg.targets:
            sender.add(target)
        try:
            return bool(sender.notify(title=msg.title, body=msg.body))
        except Exception as err:  # noqa: BLE001 - a plugin's failure is a failed send
            log.warning("notify: %s", err)
            return False

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            msg = self._message(*item)
            for attempt in range(self.max_attempts):
                if self._send(msg):
                    self.counts["sent"] += 1
                    break
                self.counts["failed_attempts"] += 1
                if attempt + 1 == self.max_attempts:
                    continue
                wait = self.retry_base_s * 2.0**attempt
                log.warning(
                    "notify: sending %r failed (attempt %d of %d); retrying in %.0f s",
                    msg.title,
                    attempt + 1,
                    self.max_attempts,
                    wait,
                )
                if self._stop.wait(wait):
                    break
            else:
                self.counts["dropped"] += 1
                log.warning("notify: dropped %r after %d attempts", msg.title, self.max_attempts)

    def close(self, timeout_s: float = 30.0) -> None:
        """Send what is queued (at most `timeout_s` seconds more), then stop the worker."""
        self._queue.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._stop.set()
            left = self._queue.qsize()
            log.warning("notify: stopped with about %d message(s) unsent", left)
            self._thread.join(5.0)


class NotifyingFrontier:
    """A frontier whose :meth:`record` also tells a :class:`ChangeNotifier` of each change.

    Everything else is the wrapped frontier's; the notification is queued after the commit.
    """

    def __init__(self, frontier, notifier: ChangeNotifier) -> None:
        self._frontier = frontier
        self._notifier = notifier

    def __getattr__(self, name: str):
        return getattr(self._frontier, name)

    def record(self, results: list, **kw) -> None:
        """Commit `results` through the frontier, then queue a message per changed page."""
        self._frontier.record(results, **kw)
        for visit, out in results:
            if out.outcome is Outcome.CHANGED:
                self._notifier.changed(getattr(visit, "url", out.url), out)
