"""Change models for pages that are not Poisson: bursts and dormancy, group priors, co-changes.

Four pieces, each usable alone and each in its own module, all learned from "changed / not changed
since the last visit":

``mmpp_step`` / ``fit_mmpp`` (:mod:`~freshcrawl.estimators.bursty.mmpp`)
    A two-state Markov-modulated Poisson process (MMPP): a page is *active* (changes at rate λ_A) or
    *dormant* (rate λ_D < λ_A) and switches A→D at rate s_AD, D→A at rate s_DA. A change makes the
    active state likelier, so another change soon likelier; a long quiet spell makes the dormant state
    likelier. ``mmpp_step`` is the exact forward filter of one visit (vectorised over pages): from the
    state probabilities after the previous visit and the visit's outcome over τ days it returns the
    new state probabilities and the visit's log-likelihood. ``fit_mmpp`` maximises the pooled
    likelihood of many pages' visit sequences (maximum likelihood, standard errors from the observed
    information).
``group_prior`` (:mod:`~freshcrawl.estimators.bursty.priors`)
    Empirical-Bayes pooling across related pages (host, URL path prefix, any grouping): the prior
    rate of a page is the mean estimate of the observed pages of its group, itself shrunk towards the
    mean over all observed pages; ``shrink`` combines it with the page's own estimate
    (``(k Δ̂ + k0 m_g) / (k + k0)``), so a page seen once starts from its group and a page seen often
    converges to its own rate.
``AgeProfile`` (:mod:`~freshcrawl.estimators.bursty.age`)
    Pages have a life cycle: a document is edited most just after it is created and less and less as
    it ages (a PEP while in draft, an outage record in its first hours). ``AgeProfile`` pools the
    visits of each group by the page's age into a piecewise-constant change rate of age (log-spaced
    age bins), which serves as the prior of a page at its age instead of its group's mean.
``detect_cochanges`` (:mod:`~freshcrawl.estimators.bursty.cochanges`)
    Excess changes within a group in one batch of visits: when more visited pages of a group changed
    than their own models predict (a one-sided Poisson test), the group had a sweep (a site-wide
    edit, a template change); the estimated share of the group it hit raises the staleness
    probability of the group's pages not visited since.

Units: days, changes per day, visits per day.
"""

from freshcrawl.estimators.bursty.age import AGE_EDGES, AgeProfile
from freshcrawl.estimators.bursty.cochanges import CoChangeAccumulator, CoChanges, detect_cochanges
from freshcrawl.estimators.bursty.mmpp import (
    MMPPFit,
    MMPPParams,
    fit_mmpp,
    mmpp_mean_rate,
    mmpp_propagate,
    mmpp_step,
    sample_mmpp_visits,
)
from freshcrawl.estimators.bursty.priors import gamma_prior, group_prior, shrink

__all__ = [
    "AGE_EDGES",
    "AgeProfile",
    "CoChangeAccumulator",
    "CoChanges",
    "MMPPFit",
    "MMPPParams",
    "detect_cochanges",
    "fit_mmpp",
    "gamma_prior",
    "group_prior",
    "mmpp_mean_rate",
    "mmpp_propagate",
    "mmpp_step",
    "sample_mmpp_visits",
    "shrink",
]
