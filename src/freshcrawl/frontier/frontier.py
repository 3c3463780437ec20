"""The frontier: the crawl state, the policy that plans it and the dispatch of due visits.

The frontier knows nothing of HTTP. It hands out due visits (:class:`Visit`, or a :class:`RobotsVisit`
when a host's robots.txt must be fetched first), takes back what each visit gave
(:class:`~freshcrawl.crawler.outcome.FetchOutcome`), commits it, and re-plans every
``replan_every_s`` seconds with a policy of :mod:`freshcrawl.policies` (the same objects the
simulation runs; time in days on the wall clock). Politeness is both an input of the plan (each host's
cap c_h = min(86,400 / delay_h, max per day) visits per day, docs/design.md "The live layer") and a rule of
the dispatch: one request at a time per host, at least ``delay_h`` seconds between two request starts,
nothing to a host in back-off, nothing to a path robots.txt disallows.

Crash safety. Every :meth:`Frontier.record` is one transaction holding the observations, the pages'
new validators, signatures and next due times, and the hosts' last request times and back-off. The
estimators' state is a function of the observation log: a new frontier replays it, so a restart after
``kill -9`` neither loses nor double-counts a committed observation. A request in flight at the crash
has no committed outcome; to keep politeness across the restart, a new frontier lets no host be
contacted before ``delay_h`` seconds after it started (and not before its committed back-off).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from yarl import URL

from freshcrawl.crawler.outcome import (
    ErrorKind,
    FetchOutcome,
    FetchRequest,
    Outcome,
    RobotsOutcome,
    status_error,
)
from freshcrawl.crawler.robots import ROBOTS_MAX_AGE_S, RobotsRules
from freshcrawl.errors import UnknownNameError
from freshcrawl.frontier.announce import Announcer
from freshcrawl.frontier.limits import check_url
from freshcrawl.policies import Observations, PolicyContext, PolicyOptions, RatePlan, make_policy
from freshcrawl.scheduling.periodic import visit_periods
from freshcrawl.store import Store
from freshcrawl.units import SECONDS_PER_DAY

__all__ = [
    "Backlog",
    "CrawlSettings",
    "Frontier",
    "HostLoad",
    "Visit",
    "RobotsVisit",
    "origin_of",
    "parse_url_list",
]

ACTIVE, DISALLOWED, FAILED, REMOVED, NONE = 1, 2, 3, 4, 0
_STATUS_CODE = {"active": ACTIVE, "disallowed": DISALLOWED, "failed": FAILED, "removed": REMOVED}
_HOST_ERRORS = (ErrorKind.THROTTLED, ErrorKind.SERVER, ErrorKind.NETWORK)
_log = logging.getLogger("freshcrawl.crawl")
#: A page whose plan gives it no visits is looked at again after this long at the latest (seconds).
_IDLE_S = 365 * SECONDS_PER_DAY


@dataclass(frozen=True)
class CrawlSettings:
    """The settings of a live crawl, stored with the crawl so that a restart keeps them.

    Attributes
    ----------
    budget : float
        Global budget B, visits per day (> 0).
    policy : str
        A policy name of :func:`freshcrawl.policies.make_policy` (``oracle`` needs true rates and is
        not available live).
    objective : str
        Allocation objective of the learned policy.
    signature : {"raw", "text"}
        What counts as a change (:func:`freshcrawl.crawler.signature.signature`).
    replan_every_s : float
        Most seconds between two plans (> 0).
    replan_after : float
        Fraction of the active pages that must have a new observation for a plan to come before
        ``replan_every_s`` is up (in [0, 1]; 0: plans on the clock only). Early in a crawl, when every
        observation changes what is known, plans follow what was learned rather than the clock.
    min_delay_s : float
        Least time between two request starts on one host, seconds (>= 0; robots.txt's Crawl-delay
        raises it).
    max_per_host_day : float or None
        Most requests per host per day; None for no limit beyond the delay.
    max_page_errors : int
        Errors in a row after which a page is marked ``failed`` and no longer visited.
    backoff_base_s, backoff_max_s : float
        Exponential back-off of a host after throttling, 5xx or network errors: base · 2^(n-1)
        seconds with full jitter in [½, 1], at most ``backoff_max_s`` (Retry-After is a floor that may
        exceed it, up to a day).
    user_agent : str or None
        User-Agent header; None for ``freshcrawl/<version> (+contact_url)``.
    contact_url : str or None
        URL where site owners learn about the crawl, put in the User-Agent.
    seed : int
        Seed of the policy's and the dispatch's randomness.
    allow_private : bool
        Lift the egress policy (:mod:`freshcrawl.crawler.egress`): URLs whose host is a private,
        link-local, reserved or cloud metadata address are then accepted and fetched (an intranet
        crawl). Off by default.
    db_give_up_s : float
        Seconds of a database outage after which a crawl stops (> 0; default 600). During an
        outage the crawl pauses fetching and keeps the outcomes of the visits in flight in memory.
    n_bins : int
        Interval slots per page of the binned estimators (``learned:mle-binned``, the default, and
        ``mm-binned``): 4 keeps the estimator at 224 bytes per page (16, the simulation's default, takes
        896). The visits of a live crawl are periodic at rates that change only at re-plans, so few
        slots hold each page's intervals.
    warc : str or None
        Directory of the crawl's WARC files (:class:`freshcrawl.archive.WarcArchive`); None keeps
        no copies.
    warc_max_bytes : int
        Size at which a WARC file is closed and the next one started, bytes (default 1 GiB).
    keep_latest : str or None
        Directory of the latest copy of each page (:class:`freshcrawl.archive.LatestCopies`),
        for crawls without ``warc``; None keeps none.
    notify : list of str or None
        Apprise URLs told of every change (:class:`freshcrawl.archive.notify.ChangeNotifier`).
    """

    budget: float = 2000.0
    policy: str = "learned"
    objective: str = "freshness-periodic"
    signature: str = "raw"
    replan_every_s: float = 3600.0
    replan_after: float = 0.1
    min_delay_s: float = 1.0
    max_per_host_day: float | None = None
    max_page_errors: int = 5
    backoff_base_s: float = 30.0
    backoff_max_s: float = 3600.0
    user_agent: str | None = None
    contact_url: str | None = None
    seed: int = 0
    n_bins: int = 4
    allow_private: bool = False
    warc: str | None = None
    warc_max_bytes: int = 1024**3
    keep_latest: str | None = None
    notify: list[str] | None = None
    db_give_up_s: float = 600.0

    def __post_init__(self) -> None:
        def positive(name: str, value: float, *, zero: bool = False) -> None:
            ok = math.isfinite(value) and (value >= 0 if zero else value > 0)
            if not ok:
                raise ValueError(f"{name} must be finite and {'>=' if zero else '>'} 0; got {value!r}")

        positive("budget (visits per day)", self.budget)
        positive("replan_every_s (seconds)", self.replan_every_s)
        if not (isinstance(self.replan_after, int | float) and 0.0 <= self.replan_after <= 1.0):
            raise ValueError(
                f"replan_after must be a fraction of the active pages in [0, 1]; got {self.replan_after!r}")
        positive("min_delay_s (seconds)", self.min_delay_s, zero=True)
        positive("backoff_base_s (seconds)", self.backoff_base_s)
        positive("backoff_max_s (seconds)", self.backoff_max_s)
        positive("db_give_up_s (seconds)", self.db_give_up_s)
        if self.max_per_host_day is not None:
            positive("max_per_host_day (requests per host per day)", self.max_per_host_day)
        if not (isinstance(self.max_page_errors, int) and self.max_page_errors >= 1):
            raise ValueError(f"max_page_errors must be an int >= 1; got {self.max_page_errors!r}")
        if self.signature not in ("raw", "text"):
            raise ValueError(f"signature must be 'raw' or 'text'; got {self.signature!r}")
        if not (isinstance(self.warc_max_bytes, int) and self.warc_max_bytes >= 1):
            raise ValueError(
                f"warc_max_bytes must be an int >= 1 bytes; got {self.warc_max_bytes!r}")
        if self.warc and self.keep_latest:
            raise ValueError(
                "warc and keep_latest exclude each other: a WARC archive keeps every copy")
        if self.policy.partition(":")[0] == "oracle":
            raise UnknownNameError("policy 'oracle' needs the true change rates and cannot run live")

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> CrawlSettings:
        """Settings from :meth:`to_dict` output; unknown keys are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


@dataclass(frozen=True, slots=True)
class Visit:
    """A due page visit: the page's id and host id in the store, and the request to send."""

    page_id: int
    host_id: int
    request: FetchRequest
    due: float

    @property
    def url(self) -> str:
        """The page's URL."""
        return self.request.url


@dataclass(frozen=True, slots=True)
class RobotsVisit:
    """A host whose robots.txt must be fetched before any other of its URLs (RFC 9309).

    ``delay_s`` is the host's politeness delay, to keep between redirect hops.
    """

    host_id: int
    origin: str
    delay_s: float = 0.0


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a normalised http(s) URL (the scope of a robots.txt).

    Examples
    --------
    >>> origin_of("http://example.com/a?b=1")
    'http://example.com'
    """
    return str(URL(url).origin())


def parse_url_list(
    lines: list[str], *, source: str = "<input>", allow_private: bool = False
) -> list[tuple[str, str, float]]:
    """Parse a URL list: one URL per line, optionally followed by white space and a weight >= 0.

    Blank lines and lines starting with ``#`` are skipped. Each URL goes through
    :func:`freshcrawl.frontier.limits.check_url`: a URL with credentials, or whose host the egress
    policy refuses (unless `allow_private`), is a bad line.

    Returns
    -------
    list of (url, origin, weight)
        Normalised URLs with their origins.

    Raises
    ------
    ValueError
        Listing every bad line as ``source:line: reason`` (at most 20, then a count), when any line
        is bad: nothing of such a list should be added.
    """
    rows, errors = [], []
    for number, line in enumerate(lines, start=1):
        text_ = line.strip()
        if not text_ or text_.startswith("#"):
            continue
        parts = text_.split()
        if len(parts) > 2:
            errors.append(f"{source}:{number}: expected 'URL [weight]'; got {text_!r}")
            continue
        try:
            url = check_url(parts[0], allow_private=allow_private)
        except ValueError as err:
            errors.append(f"{source}:{number}: {err}")
            continue
        weight = 1.0
        if len(parts) == 2:
            try:
                weight = float(parts[1])
            except ValueError:
                weight = float("nan")
            if not (math.isfinite(weight) and weight >= 0):
                errors.append(f"{source}:{number}: weight must be a finite number >= 0; got {parts[1]!r}")
                continue
        rows.append((url, origin_of(url), weight))
    if errors:
        more = f"\n... and {len(errors) - 20} more bad lines" if len(errors) > 20 else ""
        raise ValueError(
            f"{len(errors)} bad line(s) in {source}; nothing was added:\n" + "\n".join(errors[:20]) + more
        )
    return rows


@dataclass(frozen=True, slots=True)
class HostLoad:
    """The plan and politeness state of every host: arrays of shape (n_hosts,), entry k host id k + 1.

    Attributes
    ----------
    origin : list of str
        ``scheme://host[:port]``.
    n_pages : ndarray of int
        Active pages.
    rate : ndarray of float
        Planned visits per day of the active pages.
    cap : ndarray of float
        Host cap c_h, visits per day (inf: none).
    delay_s : ndarray of float
        Least seconds between two request starts.
    backoff_until : ndarray of float
        Seconds since the epoch before which nothing is sent (0: none).
    budget_in_use : float
        Planned visits per day of every active page.
    """

    origin: list[str]
    n_pages: NDArray[np.int64]
    rate: NDArray[np.float64]
    cap: NDArray[np.float64]
    delay_s: NDArray[np.float64]
    backoff_until: NDArray[np.float64]
    budget_in_use: float


@dataclass(frozen=True, slots=True)
class Backlog:
    """Active pages due now, the most overdue first: arrays of shape (m,) with ``m <= n_due``.

    Attributes
    ----------
    n_due : int
        Active pages due now, in all.
    page_id, host_id : ndarray of int
        Ids in the store.
    next_due : ndarray of float
        Due times, seconds since the epoch.
    rate : ndarray of float
        Planned visits per day.
    leased : ndarray of bool
        Whether the page is leased now.
    """

    n_due: int
    page_id: NDArray[np.intp]
    host_id: NDArray[np.intp]
    next_due: NDArray[np.float64]
    rate: NDArray[np.float64]
    leased: NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class PlanJob:
    """A re-plan under way: when it was prepared (seconds since the epoch), the pages active then,
    the policy's context and the observations recorded since the last plan."""

    now: float
    alive: NDArray[np.bool_]
    context: PolicyContext
    pending: list[tuple[int, float, bool, float, float]]
    #: pages completely observed (listed by a trusted source), their Δ from the announcements, and
    #: the Δ to plan each source with (:mod:`freshcrawl.frontier.announce`)
    complete: tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]] | None = None


def _capacity(n: int) -> int:
    """Page indices reserved for ``n`` pages: 25% more, in steps of 1024."""
    return 1024 * (1 + int(n * 1.25) // 1024)


@dataclass
class _Hosts:
    """Per-host dispatch state, indexed by host id - 1 (grown as hosts appear)."""

    origin: list[str] = field(default_factory=list)
    delay_s: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    cap: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    ready_at: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    backoff_until: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    n_backoff: NDArray[np.int64] = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    n_errors: NDArray[np.int64] = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    lease_until: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    robots_at: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    last_request_at: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    rules: list[RobotsRules | None] = field(default_factory=list)


class Frontier:
    """Crawl state, policy and politeness-aware dispatch over a :class:`~freshcrawl.store.Store`.

    Parameters
    ----------
    store : Store
        The crawl's database.
    settings : CrawlSettings
        Saved into the store (they replace the stored ones).
    now : float, optional
        Seconds since the epoch of the start (default ``time.time()``).

    Raises
    ------
    UnknownNameError
        If the policy or the objective is unknown.

    Notes
    -----
    Page ids of the store index the policy's pages (index = id - 1); the policy's context reserves
    room for 25% more pages than the store holds (``PolicyContext``'s live-runner contract), and a
    frontier that outgrows it resets the policy on a larger context and replays the log.
    """

    def __init__(self, store: Store, settings: CrawlSettings, *, now: float | None = None) -> None:
        now = time.time() if now is None else float(now)
        self.store = store
        self.settings = settings
        self.rng = np.random.default_rng(settings.seed)
        self.started_at = now
        store.save_settings({"settings": settings.to_dict()})
        self._hosts = _Hosts()
        self._load_hosts(now, restart=True)
        self._load_pages()
        self._pending: list[tuple[int, float, bool, float, float]] = []
        self._new_pages_at: float | None = None
        #: page index -> a due time set from outside (a client's date, an error floor): plans keep it
        #: until it has passed or the page reports a visit (in memory: a restart plans such pages anew)
        self.held: dict[int, float] = {}
        #: pages whose next visit is made because a trusted source announced a change: it finds the
        #: change by construction, so it judges the source but is no sample of the page's change
        #: process and is not taught to the estimator (in memory, like :attr:`held`)
        self.following: set[int] = set()
        #: host index -> pages handed out together with others of their host (its lease ends with
        #: the last of them)
        self._batches: dict[int, set[int]] = {}
        #: visits, changes seen and visits without information since this frontier started
        self.counts = {"visits": 0, "changes": 0, "errors": 0}
        self._planning_job: PlanJob | None = None
        self.announcer = Announcer(np.random.default_rng([settings.seed, 1]))
        self.announcer.load(store.source_rows(), store.announcement_log(), store.trust_rows(), store.page_hints())
        self._build_policy(now)
        self.replan(now)

    # loading -------------------------------------------------------------------------------------
    def _load_hosts(self, now: float, *, restart: bool = False) -> None:
        ha = self.store.host_arrays()
        h = self._hosts
        known = len(h.origin)
        n = ha.id.shape[0]
        if n == known:
            return
        for name in ("delay_s", "cap", "ready_at", "backoff_until", "robots_at", "last_request_at", "lease_until"):
            setattr(h, name, np.resize(getattr(h, name), n) if known else np.zeros(n))
        h.n_backoff = np.resize(h.n_backoff, n) if known else np.zeros(n, dtype=np.int64)
        h.n_errors = np.resize(h.n_errors, n) if known else np.zeros(n, dtype=np.int64)
        s = self.settings
        for k in range(known, n):
            assert ha.id[k] == k + 1, "host ids are dense from 1"
            h.origin.append(ha.origin[k])
            status = None if np.isnan(ha.robots_status[k]) else int(ha.robots_status[k])
            fetched = ha.robots_fetched_at[k]
            h.rules.append(None if np.isnan(fetched) else RobotsRules(status, ha.robots_text[k], origin=ha.origin[k]))
            h.robots_at[k] = fetched
            user_delay = s.min_delay_s if np.isnan(ha.min_delay_s[k]) else ha.min_delay_s[k]
            robots_delay = 0.0 if np.isnan(ha.crawl_delay_s[k]) else ha.crawl_delay_s[k]
            h.delay_s[k] = max(user_delay, robots_delay)
            per_day = s.max_per_host_day if np.isnan(ha.max_per_day[k]) else ha.max_per_day[k]
            h.cap[k] = self._cap(h.delay_s[k], per_day)
            h.backoff_until[k] = 0.0 if np.isnan(ha.backoff_until[k]) else ha.backoff_until[k]
            h.n_backoff[k] = ha.n_backoff[k]
            h.n_errors[k] = ha.n_errors[k]
            h.last_request_at[k] = ha.last_request_at[k]
            h.lease_until[k] = 0.0
            last = 0.0 if np.isnan(ha.last_request_at[k]) else ha.last_request_at[k]
            # a request may have been in flight when a previous run died, a robots.txt fetch too (which
            # leaves no trace in the store): wait a full delay from now before contacting any host
            floor = now + h.delay_s[k] if restart else 0.0
            h.ready_at[k] = max(last + h.delay_s[k], h.backoff_until[k], floor)

    @staticmethod
    def _cap(delay_s: float, per_day: float | None) -> float:
        cap = SECONDS_PER_DAY / delay_s if delay_s > 0 else math.inf
        if per_day is not None and not (isinstance(per_day, float) and math.isnan(per_day)):
            cap = min(cap, float(per_day))
        return cap

    def _load_pages(self) -> None:
        pa = self.store.page_arrays()
        n_max = int(pa.id.max()) if pa.id.size else 0
        cap = _capacity(n_max)
        self.capacity = cap
        idx = pa.id - 1
        self.status = np.zeros(cap, dtype=np.int8)
        self.status[idx] = [_STATUS_CODE[s] for s in pa.status]
        self.host = np.full(cap, -1, dtype=np.intp)
        self.host[idx] = pa.host_id - 1
        self.weight = np.zeros(cap)
        self.weight[idx] = pa.weight
        self.next_due = np.full(cap, np.inf)
        self.next_due[idx] = pa.next_due
        self.rate = np.zeros(cap)
        self.rate[idx] = pa.rate
        self.last_visit = np.full(cap, np.nan)
        self.last_visit[idx] = pa.last_visit_at
        self.last_copy = np.full(cap, np.nan)
        self.last_copy[idx] = pa.last_copy_at
        self.n_errors = np.zeros(cap, dtype=np.int64)
        self.n_errors[idx] = pa.n_errors
        self.n_errors_total = np.zeros(cap, dtype=np.int64)
        self.n_errors_total[idx] = pa.n_errors_total
        self.n_obs = np.zeros(cap, dtype=np.int64)
        self.lease_until = np.zeros(cap)
        #: pages with an observation recorded since the last plan was prepared, and their number
        self._news = np.zeros(cap, dtype=bool)
        self._n_news = 0
        self._n_active = int((self.status == ACTIVE).sum())
        self.max_page_id = n_max

    def _context(self, now: float) -> PolicyContext:
        alive_hosts = np.where(self.status > 0, self.host, -1)
        return PolicyContext(
            n_pages=self.capacity,
            # the audits of completely observed pages come first (frontier.announce)
            budget=max(self.settings.budget - self.announcer.audit_rate, 0.5 * self.settings.budget),
            start=now / SECONDS_PER_DAY,
            weights=self.announcer.weights(self.weight, self.host),
            rng=self.rng,
            hosts=alive_hosts,
            host_caps=self._hosts.cap.copy(),
        )

    def _build_policy(self, now: float) -> None:
        """A fresh policy on the current capacity, taught the whole observation log."""
        extra = {}
        name = self.settings.policy
        if name.partition(":")[0] == "learned" and (name.partition(":")[2] or "mle-binned").partition("@")[0].endswith("-binned"):
            extra["estimator_params"] = {"n_bins": self.settings.n_bins}
        opts = PolicyOptions(objective=self.settings.objective,
                             replan_every=self.settings.replan_every_s / SECONDS_PER_DAY, extra=extra)
        self.policy = make_policy(self.settings.policy, opts)
        if getattr(self.policy, "needs_truth", False):
            raise UnknownNameError(f"policy {self.settings.policy!r} needs true change rates; not live")
        self.policy.reset(self._context(now))
        page_id, t, changed, tau, rate, _ = self.store.learning_log()
        self.n_obs[:] = 0
        if page_id.size:
            keep = tau > 0
            idx = page_id[keep] - 1
            np.add.at(self.n_obs, idx, 1)
            p = np.where(rate[keep] > 0, rate[keep], 1.0 / tau[keep])
            self.policy.observe(Observations(idx.astype(np.intp), t[keep] / SECONDS_PER_DAY,
                                             changed[keep], tau[keep], p))

    # pages ---------------------------------------------------------------------------------------
    def add_urls(
        self, rows: list[tuple[str, str, float]], *, now: float | None = None, replan: bool = True
    ) -> tuple[int, int]:
        """Add ``(url, origin, weight)`` rows (see :func:`parse_url_list`); return (added, known).

        With ``replan`` the crawl is re-planned at once when pages were added; without, the new
        pages (and any another process added) join the plan due within :attr:`NEW_PAGES_PLAN_S`
        seconds (:attr:`next_replan`), so that many small additions cost one plan. Pages added to
        the store by another process (``freshcrawl crawl add`` while a crawl runs) join at the next
        plan.
        """
        now = time.time() if now is None else float(now)
        ids, n_known = self.store.add_pages(rows, now=now)
        if not replan:
            self._sync_new_pages(now)
        elif ids:
            self.replan(now)
        return len(ids), n_known

    def _sync_new_pages(self, now: float) -> None:
        """Take in the pages (and hosts) added to the store since this frontier last looked."""
        rows = self.store.pages_after(self.max_page_id)
        if not rows:
            return
        self._load_hosts(now)
        if rows[-1]["id"] > self.capacity:
            self._load_pages()
            self._build_policy(now)
            return
        for r in rows:
            k = r["id"] - 1
            self.status[k] = _STATUS_CODE[r["status"]]
            self.host[k], self.weight[k], self.next_due[k] = r["host_id"] - 1, r["weight"], r["next_due"]
        self.max_page_id = rows[-1]["id"]
        if self._new_pages_at is None:
            self._new_pages_at = now

    # planning ------------------------------------------------------------------------------------
    #: Seconds after pages join (from another process or a service call) within which they are planned.
    NEW_PAGES_PLAN_S = 10.0

    @property
    def next_replan(self) -> float:
        """Seconds since the epoch of the next plan: every ``replan_every_s``, soon after pages join,
        and as soon as a fraction ``replan_after`` of the active pages has a new observation.

        A policy plans for its own ``replan_every`` (the Policy protocol); where that is shorter
        (``learned-bursty`` plans a quarter of the period), the next plan comes when it runs out.
        While a plan is under way (:attr:`planning`) the next one is not due: ``inf``.
        """
        if self._planning_job is not None:
            return math.inf
        period = min(self.settings.replan_every_s, self.policy.replan_every * SECONDS_PER_DAY)
        due = self.planned_at + period
        if self._new_pages_at is not None:
            due = min(due, self._new_pages_at + self.NEW_PAGES_PLAN_S)
        after = self.settings.replan_after
        if after > 0 and self._n_news >= max(1.0, after * self._n_active):
            due = min(due, self.planned_at)  # enough was learned: due now
        return due

    @property
    def n_news(self) -> int:
        """Active pages with an observation recorded since the last plan was prepared."""
        return self._n_news

    def replan(self, now: float | None = None) -> None:
        """Teach the policy the observations since the last plan, plan, and commit rates and due times.

        Pages visited before keep their phase: the next visit is a period 1/p after the last one
        (or now, when that is past). Pages never visited get a random phase within their first
        period. Pages waiting out an error back-off keep their due time, and so do pages whose due
        time was set from outside (:attr:`held`) until their next visit. The new plan replaces the one in
        force only once it is committed: when the database fails, the previous plan keeps serving.

        The same as :meth:`prepare_plan`, :meth:`compute_plan` and :meth:`apply_plan` in a row;
        a caller that must not wait for the plan runs :meth:`compute_plan` in another thread.
        """
        job = self.prepare_plan(now)
        self.apply_plan(job, self.compute_plan(job), now=job.now)

    @property
    def planning(self) -> bool:
        """Whether a plan is prepared and not yet applied (:meth:`compute_plan` may be running)."""
        return self._planning_job is not None

    def prepare_plan(self, now: float | None = None) -> PlanJob:
        """First step of a re-plan: take in new pages and observations and set the policy's context.

        Runs on the thread that owns the frontier. Until :meth:`apply_plan`, the frontier keeps
        dispatching and recording with the plan in force; observations recorded meanwhile are
        taught at the next plan.

        Raises
        ------
        RuntimeError
            If a plan is already prepared and not applied.
        """
        if self._planning_job is not None:
            raise RuntimeError("a plan is already being made; apply it before preparing another")
        now = time.time() if now is None else float(now)
        self._sync_new_pages(now)
        self.announcer.sync_sources(self.store.source_rows())
        trust = self.announcer.refresh(now)
        try:
            self.store.save_trust(trust)
        except BaseException:
            self.announcer.dirty.update((r["source"], r["host_id"] - 1) for r in trust)  # saved next time
            raise
        pending, self._pending = self._pending, []
        est = self.policy.estimated_delta()
        planning = getattr(self.policy, "planning_delta", None)  # Δ̂ shrunk to the mean: defined for all
        prior = planning() if planning is not None and self.n_obs.any() else est
        complete = self.announcer.completely_observed(self.capacity, self.host, prior, now)
        complete += (self.announcer.source_delta(self.capacity, self.host, prior, complete[1]),)
        job = PlanJob(now, self.status == ACTIVE, self._context(now), pending, complete)
        self._news[:] = False
        self._n_news = 0
        self._n_active = int(job.alive.sum())
        self._planning_job = job
        return job

    def compute_plan(self, job: PlanJob) -> Any:
        """Second step: teach the policy `job`'s observations and plan (the costly part: estimator
        updates and the allocation; safe in a worker thread).

        Touches only the policy and `job`, which neither :meth:`due` nor :meth:`record` uses, so the
        owning thread may keep dispatching and recording meanwhile.
        """
        self._feed_policy(job.pending)
        job.pending.clear()  # taught: a cancelled plan does not give them back
        self.policy.update_context(job.context)
        if hasattr(self.policy, "set_observed_completely") and job.complete is not None:
            self.policy.set_observed_completely(*job.complete)
        return self.policy.plan(job.now / SECONDS_PER_DAY, job.alive)

    def cancel_plan(self, job: PlanJob) -> None:
        """Drop a prepared plan whose computation failed: the plan in force stays, and observations
        the policy was not taught wait for the next plan."""
        if job is self._planning_job:
            self._planning_job = None
            self._pending[:0] = job.pending

    def apply_plan(self, job: PlanJob, plan: Any, *, now: float | None = None) -> None:
        """Last step, on the owning thread: set rates and due times from `plan` and commit them.

        `now` (default the clock) is when the plan takes effect; pages that stopped being active
        since :meth:`prepare_plan` get no visits. A plan made before pages joined and outgrew the
        policy's room (the policy was rebuilt meanwhile) is dropped, and the next plan comes within
        :attr:`NEW_PAGES_PLAN_S`.
        """
        if job is not self._planning_job:
            raise RuntimeError("apply_plan takes the job of the last prepare_plan")
        self._planning_job = None
        if job.alive.shape != self.status.shape:  # pages joined and outgrew the policy meanwhile
            self._new_pages_at = job.now  # a plan on the new policy soon; the one in force stays
            return
        now = time.time() if now is None else float(now)
        now = max(now, job.now)
        alive = job.alive & (self.status == ACTIVE)
        if isinstance(plan, RatePlan):
            rates = np.where(alive, np.asarray(plan.rates, dtype=np.float64), 0.0)
            first = None
        else:  # explicit visits: the first one sets the due time, their count the rate
            counts = np.bincount(plan.pages, minlength=self.capacity)[: self.capacity]
            rates = np.where(alive, counts / self.policy.replan_every, 0.0)
            first = np.full(self.capacity, np.inf)
            np.minimum.at(first, plan.pages, np.asarray(plan.times) * SECONDS_PER_DAY)
        total = rates.sum()
        if total > self.settings.budget * (1 + 1e-12):
            rates *= self.settings.budget / total
        # completely observed pages: most of their rate follows announcements, the rest is periodic
        periodic = self.announcer.split(rates, getattr(self.policy, "completely_observed_", None),
                                        None if job.complete is None else job.complete[1])
        period = visit_periods(periodic, unit=SECONDS_PER_DAY, longest=_IDLE_S)
        never = np.isnan(self.last_visit)
        due = np.where(never, now + self.rng.random(self.capacity) * period, self.last_visit + period)
        # a page not visited yet keeps the phase an earlier plan gave it (within its first period, or
        # overdue while its host was busy): drawn again at every plan it could be pushed back forever
        phased = never & (self.rate > 0) & (self.next_due <= now + period)
        due = np.where(phased, self.next_due, due)
        if first is not None:
            due = np.where(np.isfinite(first), first, now + self.settings.replan_every_s)
        due = np.maximum(due, now) if first is None else due
        keep = (self.n_errors > 0) | (self.lease_until > now) | ~alive
        next_due = np.where(keep, self.next_due, due)
        expired = []
        for k, t in self.held.items():  # a hold lasts until the page's next visit, not the plan
            if alive[k]:
                next_due[k] = t
            else:
                expired.append(k)
        for k in self.announcer.catch_up(self.last_copy, self.host):  # changes announced before the plan
            if alive[k] and self.lease_until[k] <= now:
                next_due[k] = now
                self.held[k] = now
                self.following.add(k)
        rate = np.where(alive, rates, 0.0)
        est = self.policy.estimated_delta()
        delta_hat = np.full(self.capacity, np.nan) if est is None else np.asarray(est, dtype=np.float64)
        ids = np.flatnonzero(self.status > 0)
        self.store.save_plan(ids + 1, rate[ids], next_due[ids], delta_hat[ids], self.n_obs[ids],
                             settings={"planned_at": job.now, "rate_prior": self._rate_prior(ids)})
        # the plan is committed: only now does it replace the one in force
        self.next_due, self.rate = next_due, rate
        for k in expired:
            del self.held[k]
        self.planned_at = job.now
        self._new_pages_at = None

    def _rate_prior(self, ids: NDArray[np.intp]) -> dict[str, Any] | None:
        """The plan's prior of Δ (changes per day) by host id: ``{"hosts": {id: [m, V]}}`` for the
        hosts of pages ``ids`` (what ``crawl explain`` shows a page's estimate against); None when
        the policy plans on no prior."""
        unc = getattr(self.policy, "rate_uncertainty", lambda: None)()
        if unc is None:
            return None
        m, v = unc["prior_mean"], unc["prior_var"]
        host_ids, first = np.unique(self.host[ids], return_index=True)
        out = {}
        for h, k in zip(host_ids.tolist(), ids[first].tolist()):
            if h >= 0 and math.isfinite(m[k]) and math.isfinite(v[k]):
                out[str(h + 1)] = [float(f"{m[k]:.6g}"), float(f"{v[k]:.6g}")]
        return {"hosts": out}

    def _feed_policy(self, pending: list[tuple[int, float, bool, float, float]]) -> None:
        if not pending:
            return
        arr = np.array(pending, dtype=np.float64)
        order = np.argsort(arr[:, 1], kind="stable")
        arr = arr[order]
        self.policy.observe(Observations(arr[:, 0].astype(np.intp), arr[:, 1] / SECONDS_PER_DAY,
                                         arr[:, 2].astype(bool), arr[:, 3], arr[:, 4]))

    # dispatch ------------------------------------------------------------------------------------
    def due(
        self,
        now: float | None = None,
        limit: int = 64,
        *,
        lease_s: float = 300.0,
        per_host: int = 1,
        robots: bool = True,
        hosts: NDArray[np.bool_] | None = None,
    ) -> list[Visit | RobotsVisit]:
        """Up to ``limit`` hosts' visits that may start now, earliest due first.

        Each visit is leased for ``lease_s`` seconds, with its host: neither is handed out again until
        :meth:`record` or :meth:`record_robots` takes the outcome back (the host: the outcomes of all
        its visits handed out together), :meth:`release` gives it back, or the lease runs out (a
        fetcher that died; the visit is then due again). A page disallowed by its host's robots.txt is
        recorded at once (no information, ``why="robots"``) and marked ``disallowed`` instead of being
        handed out.

        Parameters
        ----------
        per_host : int, default=1
            Most visits of one host handed out together (its earliest due pages); the fetcher that
            takes several spaces them by the host's delay itself.
        robots : bool, default=True
            Whether a host whose robots.txt is unknown or older than a day gets a
            :class:`RobotsVisit` first. With False (a fetcher that enforces robots.txt itself) no
            robots.txt is handed out, and rules are applied only while fresh.
        hosts : ndarray of bool, shape (n_hosts,), optional
            Hosts (by index, host id - 1) whose visits may be handed out; default every host.
        """
        now = time.time() if now is None else float(now)
        if limit <= 0:
            return []
        per_host = max(1, int(per_host))
        out: list[Visit | RobotsVisit] = []
        try:
            return self._due(now, limit, lease_s, out, per_host=per_host, robots=robots, hosts=hosts)
        except BaseException:  # the database failed: nothing is handed out, nothing stays leased
            self.release(out)
            raise

    def _due(self, now: float, limit: int, lease_s: float, out: list[Visit | RobotsVisit], *,
             per_host: int, robots: bool, hosts: NDArray[np.bool_] | None
             ) -> list[Visit | RobotsVisit]:
        h = self._hosts
        # hosts whose pages all wait on robots.txt still need it fetched again when it is due
        for hk in np.unique(self.host[self.status == DISALLOWED]) if robots else ():
            if hosts is not None and not hosts[hk]:
                continue
            if len(out) < limit and h.lease_until[hk] <= now and h.ready_at[hk] <= now and self._robots_due(hk, now):
                h.lease_until[hk] = now + lease_s
                out.append(RobotsVisit(int(hk) + 1, h.origin[hk], self._robots_hop_delay(hk)))
        cand = np.flatnonzero((self.next_due <= now) & (self.status == ACTIVE) & (self.lease_until <= now))
        hc = self.host[cand]
        ok = (h.lease_until[hc] <= now) & (h.ready_at[hc] <= now)
        if hosts is not None:
            ok &= hosts[hc]
        cand, hc = cand[ok], hc[ok]
        if cand.size == 0:
            return out
        all_cand, all_hc = cand, hc
        # each host's earliest due page (O(m), no sort of every due page), then the earliest hosts
        nd = self.next_due[cand]
        best = np.full(len(h.origin), np.inf)
        np.minimum.at(best, hc, nd)
        at_best = np.flatnonzero(nd == best[hc])
        _, first = np.unique(hc[at_best], return_index=True)  # one page per host (the lowest id on a tie)
        cand = cand[at_best[first]]
        room = limit - len(out)
        if cand.size > room:
            cand = cand[np.argpartition(self.next_due[cand], room - 1)[:room]]
        cand = cand[np.argsort(self.next_due[cand], kind="stable")]
        pages_out = []
        disallowed = []
        chosen = []
        for k in cand:
            hk = int(self.host[k])
            if robots and self._robots_due(hk, now):
                h.lease_until[hk] = now + lease_s
                out.append(RobotsVisit(hk + 1, h.origin[hk], self._robots_hop_delay(hk)))
                continue
            chosen.append(hk)
            pages_out.append(int(k))
        if per_host > 1 and chosen:
            # the chosen hosts' earliest due pages, up to per_host each, earliest first
            sel = np.isin(all_hc, np.asarray(chosen))
            more, mhc = all_cand[sel], all_hc[sel]
            order = np.lexsort((more, self.next_due[more], mhc))
            more, mhc = more[order], mhc[order]
            starts = np.searchsorted(mhc, mhc, side="left")
            keep = (np.arange(more.size) - starts) < per_host
            more = more[keep]
            pages_out = more[np.argsort(self.next_due[more], kind="stable")].tolist()
        rows = self.store.request_rows([k + 1 for k in pages_out]) if pages_out else {}
        leased: dict[int, list[int]] = {}
        for k in pages_out:
            url, etag, last_modified, signature = rows[k + 1]
            hk = int(self.host[k])
            rules = h.rules[hk]
            applies = robots or (rules is not None and now - h.robots_at[hk] < ROBOTS_MAX_AGE_S)
            if applies and not rules.allowed(url):
                disallowed.append((k, url))
                continue
            h.lease_until[hk] = now + lease_s
            self.lease_until[k] = now + lease_s
            leased.setdefault(hk, []).append(k)
            out.append(Visit(k + 1, hk + 1, FetchRequest(url, etag, last_modified, signature, float(h.delay_s[hk]),
                                                         keep_body=k in self.announcer.sources),
                             float(self.next_due[k])))
        for hk, ks in leased.items():
            if len(ks) > 1:
                self._batches[hk] = set(ks)
            else:
                self._batches.pop(hk, None)
        if disallowed:
            self._record_disallowed(disallowed, now)
        return out

    #: Least wait between the redirect hops of a robots.txt fetch, seconds: the Crawl-delay it may set
    #: is not known until it is read, so the hops wait at least the usual default delay.
    ROBOTS_HOP_DELAY_S = 1.0

    def _robots_hop_delay(self, hk: int) -> float:
        return max(float(self._hosts.delay_s[hk]), self.ROBOTS_HOP_DELAY_S)

    def _robots_due(self, hk: int, now: float) -> bool:
        h = self._hosts
        rules = h.rules[hk]
        if rules is None or now - h.robots_at[hk] >= ROBOTS_MAX_AGE_S:
            return True
        # 5xx or unreachable: the host stays disallowed until a retry (after its back-off) succeeds
        return rules.mode == "disallow-all" and now >= h.backoff_until[hk]

    def _record_disallowed(self, items: list[tuple[int, str]], now: float) -> None:
        obs = [dict(page_id=k + 1, time=now, outcome=Outcome.NO_INFO.value, why="robots",
                    error=ErrorKind.ROBOTS.value, source="fetcher") for k, _ in items]
        upd = [dict(id=k + 1, status="disallowed", last_error="robots") for k, _ in items]
        self.store.record(obs, upd, [])
        for k, _ in items:
            self.status[k] = DISALLOWED

    def next_wakeup(self, now: float | None = None) -> float:
        """Earliest time (seconds since the epoch) at which :meth:`due` may hand out something new."""
        now = time.time() if now is None else float(now)
        h = self._hosts
        waiting = (self.status == ACTIVE) & (self.lease_until <= now)
        if not waiting.any():
            return self.next_replan
        hk = self.host[waiting]
        free = h.lease_until[hk] <= now
        if not free.any():
            return self.next_replan
        t = np.maximum(self.next_due[waiting][free], h.ready_at[hk[free]])
        return float(min(t.min(), self.next_replan))

    # outcomes ------------------------------------------------------------------------------------
    def record(self, results: list[tuple[Visit, FetchOutcome]], *, source: str = "fetcher") -> None:
        """Commit what each visit gave, in one transaction, and learn from it at the next plan.

        Changed and unchanged outcomes are observations (τ from the page's previous copy, p its rate);
        a first copy starts the page's history; no information counts an error: for the host
        (back-off) when the host throttled, failed or could not be reached, for the page (it is marked
        ``failed`` after ``max_page_errors`` in a row) unless it was throttled or forbidden.

        Effects after commit: when the transaction fails, the frontier is left as it was (leases,
        last copies, due times, host back-off, counts), so the same outcomes can be recorded again
        and give the same observations.

        Raises
        ------
        DatabaseUnavailableError
            If the database cannot be reached (nothing was recorded).
        """
        if not results:
            return
        undo = self._snapshot([v.page_id - 1 for v, _ in results], [v.host_id - 1 for v, _ in results])
        try:
            judged = self._record(results, source)
        except BaseException:
            self._restore(undo)
            raise
        self._after_record(results, judged)

    def _record(self, results: list[tuple[Visit, FetchOutcome]], source: str) -> list[tuple[int, int, float, float, bool]]:
        s = self.settings
        obs_rows, page_upd, host_upd, learn, judged, answered = [], [], [], [], [], []
        hosts_touched: dict[int, dict[str, Any]] = {}
        for visit, out in results:
            k = visit.page_id - 1
            hk = visit.host_id - 1
            t = out.started_at
            row = dict(page_id=visit.page_id, time=t, outcome=out.outcome.value, status=out.status,
                       n_bytes=out.n_bytes, elapsed_s=out.elapsed_s, why=out.why,
                       error=None if out.error is None else out.error.value, source=source,
                       tau_days=None, rate=None)
            upd: dict[str, Any] = dict(id=visit.page_id, last_visit_at=t)
            self.last_visit[k] = t
            self.counts["visits"] += 1
            period = SECONDS_PER_DAY / self.rate[k] if self.rate[k] > 0 else _IDLE_S
            if out.outcome is Outcome.NO_INFO:
                self.counts["errors"] += 1
                self.n_errors_total[k] += 1
                upd["n_errors_total"] = int(self.n_errors_total[k])
                if out.error not in (ErrorKind.THROTTLED, ErrorKind.ROBOTS):
                    self.n_errors[k] += 1
                    upd.update(n_errors=int(self.n_errors[k]), last_error=out.why)
                    wait = min(period, s.backoff_base_s * 2.0 ** (self.n_errors[k] - 1))
                    if self.n_errors[k] >= s.max_page_errors:
                        self.status[k] = FAILED
                        upd["status"] = "failed"
                else:
                    wait = 0.0
                self.next_due[k] = t + out.elapsed_s + wait
            else:
                kind = out.outcome
                tau_s = t - self.last_copy[k]
                answered.append(k)
                if kind in (Outcome.CHANGED, Outcome.UNCHANGED) and tau_s > 0:
                    judged.append((k, hk, float(self.last_copy[k]), t, kind is Outcome.CHANGED))
                    self.counts["changes"] += kind is Outcome.CHANGED
                    # taught: a visit independent of the page's changes; not one made for an
                    # announced change (:attr:`following`), nor a source's read (a sitemap or a
                    # feed changes with every page it lists: its rate is no page's rate, and pooled
                    # in the plan's prior it would raise every host's)
                    if k not in self.following and k not in self.announcer.sources:
                        tau = tau_s / SECONDS_PER_DAY
                        p = self.rate[k] if self.rate[k] > 0 else 1.0 / tau
                        row.update(tau_days=tau, rate=float(p))
                        learn.append((k, t, float(kind is Outcome.CHANGED), tau, p))
                        self.n_obs[k] += 1
                elif kind is not Outcome.FIRST:
                    row["outcome"] = Outcome.FIRST.value  # nothing to compare with: a first copy
                self.last_copy[k] = t
                self.n_errors[k] = 0
                upd.update(last_copy_at=t, etag=out.etag, last_modified=out.last_modified,
                           signature=out.signature, n_errors=0)
                self.next_due[k] = t + period
            upd["next_due"] = float(self.next_due[k])
            obs_rows.append(row)
            page_upd.append(upd)
            self.lease_until[k] = 0.0
            self.held.pop(k, None)
            hosts_touched[hk] = self._host_after(hk, out)
        for hk, values in hosts_touched.items():
            self._free_host(hk)
            host_upd.append(dict(id=hk + 1, **values))
        self.store.record(obs_rows, page_upd, host_upd)
        self.following.difference_update(answered)
        self._pending.extend(learn)
        for k, *_ in learn:
            if not self._news[k]:
                self._news[k] = True
                self._n_news += 1
        return judged

    def _after_record(self, results: list[tuple[Visit, FetchOutcome]],
                      judged: list[tuple[int, int, float, float, bool]]) -> None:
        """Once the visits are committed: judge the announcements of the pages visited, read the
        sources visited (:mod:`freshcrawl.frontier.sources`; a read that fails is logged and retried
        at the source's next visit)."""
        for item in judged:
            self.announcer.on_visit(*item)
        sources = [(v.page_id - 1, out) for v, out in results if v.page_id - 1 in self.announcer.sources]
        if sources:
            from freshcrawl.errors import DatabaseUnavailableError
            from freshcrawl.frontier.sources import read_source

            for k, out in sources:
                try:
                    read_source(self, k, out)
                except DatabaseUnavailableError as err:
                    _log.warning("source %s not read: %s", self.announcer.sources[k][1], err)
                except Exception:  # noqa: BLE001 - a parser's defect must not end the crawl; read again later
                    _log.exception("source %s not read", self.announcer.sources[k][1])

    _PAGE_STATE = ("last_visit", "last_copy", "next_due", "n_errors", "n_errors_total", "n_obs", "status",
                   "lease_until")
    _HOST_STATE = ("delay_s", "cap", "ready_at", "backoff_until", "n_backoff", "n_errors", "lease_until",
                   "robots_at", "last_request_at")

    def _snapshot(self, page_idx: list[int], host_idx: list[int]) -> dict[str, Any]:
        """The in-memory state of pages and hosts that a write changes, to restore if it fails."""
        pk = np.asarray(sorted(set(page_idx)), dtype=np.intp)
        hk = np.asarray(sorted(set(host_idx)), dtype=np.intp)
        h = self._hosts
        return {
            "pk": pk, "hk": hk,
            "pages": {name: getattr(self, name)[pk].copy() for name in self._PAGE_STATE},
            "hosts": {name: getattr(h, name)[hk].copy() for name in self._HOST_STATE},
            "rules": [h.rules[k] for k in hk],
            "held": {int(k): self.held[int(k)] for k in pk if int(k) in self.held},
            "counts": dict(self.counts),
            "rng": self.rng.bit_generator.state,
            "n_pending": len(self._pending),
        }

    def _restore(self, snap: dict[str, Any]) -> None:
        """Put back the state :meth:`_snapshot` saved (a write that did not commit)."""
        pk, hk = snap["pk"], snap["hk"]
        h = self._hosts
        for name, values in snap["pages"].items():
            getattr(self, name)[pk] = values
        for name, values in snap["hosts"].items():
            getattr(h, name)[hk] = values
        for k, rules in zip(hk, snap["rules"], strict=True):
            h.rules[k] = rules
        for k in pk:
            self.held.pop(int(k), None)
        self.held.update(snap["held"])
        self.counts.clear()
        self.counts.update(snap["counts"])
        self.rng.bit_generator.state = snap["rng"]
        del self._pending[snap["n_pending"]:]

    def _host_after(self, hk: int, out: FetchOutcome) -> dict[str, Any]:
        """Update host ``hk``'s politeness state after a request; return the columns to commit."""
        s = self.settings
        h = self._hosts
        end = out.started_at + out.elapsed_s
        values: dict[str, Any] = {}
        if out.error is not ErrorKind.ROBOTS:
            last = float(h.last_request_at[hk])
            h.last_request_at[hk] = out.started_at if math.isnan(last) else max(last, out.started_at)
            values["last_request_at"] = float(h.last_request_at[hk])
        if out.error in _HOST_ERRORS:
            h.n_backoff[hk] += 1
            wait = min(s.backoff_max_s, s.backoff_base_s * 2.0 ** (h.n_backoff[hk] - 1))
            wait *= 0.5 + 0.5 * self.rng.random()
            if out.retry_after_s is not None:
                wait = max(wait if out.error is not ErrorKind.THROTTLED else 0.0,
                           min(out.retry_after_s, SECONDS_PER_DAY))
            h.backoff_until[hk] = max(h.backoff_until[hk], end + wait)
            h.n_errors[hk] += 1
            values.update(n_backoff=int(h.n_backoff[hk]), backoff_until=float(h.backoff_until[hk]),
                          n_errors=int(h.n_errors[hk]))
        elif out.outcome is not Outcome.NO_INFO and h.n_backoff[hk]:
            h.n_backoff[hk] = 0
            values["n_backoff"] = 0
        # a visit that followed redirects (or fetched robots.txt, which may have) made its last request
        # as late as its end: the delay runs from there
        last = end if (out.final_url is not None or out.url.endswith("/robots.txt")) else out.started_at
        h.ready_at[hk] = max(last + h.delay_s[hk], end, h.backoff_until[hk])
        return values

    def record_robots(self, visit: RobotsVisit, out: RobotsOutcome) -> None:
        """Commit a robots.txt fetch: the rules, the Crawl-delay (a new host cap) and the host's state.

        Pages of the host that the new rules allow again become active, due now. When the
        transaction fails, the frontier is left as it was (DatabaseUnavailableError is raised).
        """
        hk = visit.host_id - 1
        host_row = self.store.host_row(visit.host_id)
        revive = np.flatnonzero((self.status == DISALLOWED) & (self.host == hk))
        rows = self.store.page_rows((revive + 1).tolist()) if revive.size else {}
        undo = self._snapshot(revive.tolist(), [hk])
        try:
            self._record_robots(visit, out, host_row, revive, rows)
        except BaseException:
            self._restore(undo)
            raise
        rules = self._hosts.rules[hk]
        if rules is not None and rules.sitemaps:  # with `crawl add --sitemap auto` they are read
            from freshcrawl.frontier.sources import auto_sitemaps

            auto_sitemaps(self, visit.origin, rules.sitemaps, out.fetched_at)

    def _record_robots(self, visit: RobotsVisit, out: RobotsOutcome, host_row: dict[str, Any],
                       revive: NDArray[np.intp], rows: dict[int, dict[str, Any]]) -> None:
        hk = visit.host_id - 1
        h = self._hosts
        s = self.settings
        rules = RobotsRules(out.status, out.text, origin=visit.origin)
        h.rules[hk] = rules
        h.robots_at[hk] = out.fetched_at
        user_delay = s.min_delay_s if host_row["min_delay_s"] is None else host_row["min_delay_s"]
        crawl_delay = rules.crawl_delay
        h.delay_s[hk] = max(user_delay, crawl_delay or 0.0)
        per_day = s.max_per_host_day if host_row["max_per_day"] is None else host_row["max_per_day"]
        h.cap[hk] = self._cap(h.delay_s[hk], per_day)
        error = _robots_error(out)
        as_visit = FetchOutcome(visit.origin + "/robots.txt", Outcome.FIRST if error is None else Outcome.NO_INFO,
                                out.why, out.fetched_at, out.elapsed_s, out.status, error=error,
                                retry_after_s=out.retry_after_s)
        values = self._host_after(hk, as_visit)
        values.update(robots_status=out.status, robots_text=out.text, robots_fetched_at=out.fetched_at,
                      robots_why=out.why, crawl_delay_s=crawl_delay)
        h.lease_until[hk] = 0.0
        page_upd = []
        if revive.size and rules.mode != "disallow-all":
            for k in revive:
                if rules.allowed(rows[k + 1]["url"]):
                    self.status[k] = ACTIVE
                    self.next_due[k] = out.fetched_at
                    page_upd.append(dict(id=int(k) + 1, status="active", next_due=out.fetched_at))
        self.store.record([], page_upd, [dict(id=visit.host_id, **values)])

    def set_host_delay(self, hk: int, min_delay_s: float) -> None:
        """Set host ``hk``'s (index) own minimum delay, seconds; its cap follows at the next plan."""
        h = self._hosts
        rules = h.rules[hk]
        crawl_delay = (rules.crawl_delay if rules is not None else None) or 0.0
        h.delay_s[hk] = max(min_delay_s, crawl_delay)
        h.cap[hk] = self._cap(h.delay_s[hk], self.settings.max_per_host_day)
        h.ready_at[hk] = max(np.nan_to_num(h.last_request_at[hk]) + h.delay_s[hk], h.backoff_until[hk])

    def release(self, items: list[Visit | RobotsVisit]) -> None:
        """Give back visits handed out by :meth:`due` that were not made (nothing is recorded)."""
        for item in items:
            if isinstance(item, Visit):
                self.lease_until[item.page_id - 1] = 0.0
                self._free_host(item.host_id - 1)
            else:
                self._hosts.lease_until[item.host_id - 1] = 0.0

    def _free_host(self, hk: int) -> None:
        """End host ``hk``'s lease unless pages of it handed out together are still leased."""
        h = self._hosts
        batch = self._batches.get(hk)
        if batch is not None:
            if any(self.lease_until[k] == h.lease_until[hk] for k in batch):
                return
            del self._batches[hk]
        h.lease_until[hk] = 0.0

    # reports -------------------------------------------------------------------------------------
    def ping(self) -> None:
        """One round trip to the crawl's database; DatabaseUnavailableError if it cannot be reached."""
        self.store.ping()

    def budget_in_use(self) -> float:
        """Sum of the current rates, visits per day."""
        return float(self.rate.sum())

    def n_due(self, now: float | None = None) -> int:
        """Active pages due now."""
        now = time.time() if now is None else float(now)
        return int(((self.next_due <= now) & (self.status == ACTIVE)).sum())

    def n_leased(self, now: float | None = None) -> int:
        """Active pages leased now (handed out by :meth:`due`, outcome not yet taken back)."""
        now = time.time() if now is None else float(now)
        return int(((self.lease_until > now) & (self.status == ACTIVE)).sum())

    def page_counts(
        self, host_ids: Sequence[int] | None = None, *, now: float | None = None
    ) -> dict[str, int]:
        """Pages of the crawl (or of the hosts ``host_ids`` lists) by status, and the active ones
        leased now.

        Returns
        -------
        dict
            ``active``, ``disallowed``, ``failed``, ``removed`` (pages by status) and ``leased``.
        """
        now = time.time() if now is None else float(now)
        sel = self.status > 0
        if host_ids is not None:
            sel &= np.isin(self.host, np.asarray(host_ids, dtype=np.int64) - 1)
        counts = {
            name: int((sel & (self.status == code)).sum()) for name, code in _STATUS_CODE.items()
        }
        counts["leased"] = int((sel & (self.status == ACTIVE) & (self.lease_until > now)).sum())
        return counts

    def host_load(self) -> HostLoad:
        """The plan and the politeness state of every host (copies; see :class:`HostLoad`)."""
        h = self._hosts
        n = len(h.origin)
        active = self.status == ACTIVE
        return HostLoad(
            origin=list(h.origin),
            n_pages=np.bincount(self.host[active], minlength=n)[:n],
            rate=np.bincount(self.host[active], weights=self.rate[active], minlength=n)[:n],
            cap=h.cap.copy(),
            delay_s=h.delay_s.copy(),
            backoff_until=h.backoff_until.copy(),
            budget_in_use=float(self.rate[active].sum()),
        )

    def backlog(self, limit: int, now: float | None = None) -> Backlog:
        """The ``limit`` active pages due the longest, most overdue first (leased ones included).

        Raises
        ------
        ValueError
            If ``limit`` is negative.
        """
        if limit < 0:
            raise ValueError(f"limit must be >= 0 pages; got {limit!r}")
        now = time.time() if now is None else float(now)
        due = np.flatnonzero((self.next_due <= now) & (self.status == ACTIVE))
        top = due[np.argsort(self.next_due[due], kind="stable")[:limit]]
        return Backlog(
            n_due=int(due.size),
            page_id=top + 1,
            host_id=self.host[top] + 1,
            next_due=self.next_due[top].copy(),
            rate=self.rate[top].copy(),
            leased=self.lease_until[top] > now,
        )

    # hosts and pages by id (as in the store) -----------------------------------------------------
    def origins(self) -> list[str]:
        """The origin (``scheme://host[:port]``) of every host; entry k is host id k + 1."""
        return list(self._hosts.origin)

    def origin(self, host_id: int) -> str:
        """The origin of host ``host_id``; IndexError if the crawl has no such host."""
        if not 1 <= host_id <= len(self._hosts.origin):
            raise IndexError(
                f"no host id {host_id!r} in this crawl ({len(self._hosts.origin)} hosts)"
            )
        return self._hosts.origin[host_id - 1]

    def host_id(self, origin: str) -> int | None:
        """The id of the host whose origin is ``origin`` (see :func:`origin_of`), or None."""
        try:
            return self._hosts.origin.index(origin) + 1
        except ValueError:
            return None

    def ready_hosts(self, now: float | None = None) -> NDArray[np.intp]:
        """Ids of the hosts :meth:`due` may hand a page of now, increasing.

        A host is ready when one of its active pages is due and not leased, the host is not leased,
        and its politeness delay and back-off have run out.
        """
        now = time.time() if now is None else float(now)
        h = self._hosts
        due = (self.next_due <= now) & (self.status == ACTIVE) & (self.lease_until <= now)
        keep = np.zeros(len(h.origin), dtype=bool)
        keep[np.unique(self.host[due])] = True
        keep &= np.maximum(h.ready_at, h.lease_until) <= now
        return np.flatnonzero(keep) + 1

    def hold(self, page_id: int, until: float, *, only_later: bool = False) -> bool:
        """Make page ``page_id`` due at ``until`` and keep that date across plans until its next visit.

        A due time set from outside the plan: a client's next fetch date, a worker's floor after an
        error. The page's lease ends; the new due time is committed at once. With ``only_later``, a
        page already due at ``until`` or later is left as it is.

        Parameters
        ----------
        page_id : int
            The page's id in the store.
        until : float
            Seconds since the epoch.

        Returns
        -------
        bool
            Whether the due time was set.
        """
        k = page_id - 1
        until = float(until)
        if only_later and not until > self.next_due[k]:
            return False
        self.store.record([], [{"id": page_id, "next_due": until}], [])  # committed first
        self.next_due[k] = until
        self.held[k] = until
        self.lease_until[k] = 0.0
        return True

    def remove(self, page_ids: list[int]) -> None:
        """Remove pages from the crawl: never visited again, their observation log kept.

        Their leases end; the status is committed at once.
        """
        ks = np.asarray(page_ids, dtype=np.intp) - 1
        self.store.set_page_status([int(i) for i in page_ids], "removed", removed_at=time.time())
        self.status[ks] = REMOVED
        for k in ks.tolist():
            self.held.pop(k, None)
        self.lease_until[ks] = 0.0

    def remove_host(self, host_id: int) -> int:
        """Remove every page of host ``host_id`` not yet removed (:meth:`remove`); return how many."""
        ks = np.flatnonzero(
            (self.host == host_id - 1) & (self.status != REMOVED) & (self.status != NONE)
        )
        self.remove((ks + 1).tolist())
        return int(ks.size)

    def release_host(self, host_id: int) -> None:
        """End the lease of host ``host_id`` taken by :meth:`due`.

        Its next request may start as soon as its delay allows; page leases are not touched.
        """
        self._free_host(host_id - 1)

    def block_host(self, host_id: int, until: float) -> None:
        """Send nothing to host ``host_id`` before ``until`` (seconds since the epoch; 0 unblocks).

        Its politeness delay still counts from its last request. Committed at once.
        """
        hk = host_id - 1
        h = self._hosts
        self.store.save_host(host_id, backoff_until=float(until))  # committed first
        h.backoff_until[hk] = float(until)
        h.ready_at[hk] = max(np.nan_to_num(h.last_request_at[hk]) + h.delay_s[hk], float(until))

    def set_delay(self, delay_s: float, host_id: int | None = None) -> None:
        """Least seconds between two request starts on host ``host_id``, or (None) on every host.

        With None the delay is also the default of the hosts to come. robots.txt's Crawl-delay may
        raise it. Committed at once; the host caps follow at the next plan.
        """
        if host_id is None:
            self.settings = replace(self.settings, min_delay_s=float(delay_s))
            targets: range | list[int] = range(len(self._hosts.origin))
        else:
            targets = [host_id - 1]
        for hk in targets:
            self.store.save_host(hk + 1, min_delay_s=float(delay_s))
            self.set_host_delay(hk, float(delay_s))


def _robots_error(out: RobotsOutcome) -> ErrorKind | None:
    # a 4xx (or any other answer that is not an error of the host) allows everything (RFC 9309 2.3.1.3)
    error = status_error(out.status)
    return None if error is ErrorKind.PAGE else error

