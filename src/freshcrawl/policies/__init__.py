"""Recrawl policies and the registry that builds them from command-line names.

Names: ``learned:<estimator>``, ``oracle``, ``uniform``, ``proportional``, ``nutch``,
``stormcrawler``, ``heritrix``, ``asyncmirrorsync``, ``htraa``.
"""

from __future__ import annotations

import importlib
import importlib.util

from freshcrawl.errors import UnknownNameError
from freshcrawl.policies.base import (
    Observations,
    Plan,
    Policy,
    PolicyContext,
    PolicyOptions,
    RatePlan,
    VisitPlan,
)

__all__ = [
    "Observations",
    "Plan",
    "Policy",
    "PolicyContext",
    "PolicyOptions",
    "RatePlan",
    "VisitPlan",
    "POLICY_FACTORIES",
    "make_policy",
    "policy_names",
]

#: name -> "module:factory"; a factory is called as ``factory(arg, options)`` where ``arg`` is the
#: text after ``:`` in the name (``None`` if absent) and returns a :class:`Policy`.
POLICY_FACTORIES: dict[str, str] = {
    "learned": "freshcrawl.policies.learned:make_learned",
    "learned-bursty": "freshcrawl.policies.bursty:make_bursty",
    "oracle": "freshcrawl.policies.learned:make_oracle",
    "uniform": "freshcrawl.policies.baselines:make_uniform",
    "proportional": "freshcrawl.policies.baselines:make_proportional",
    "nutch": "freshcrawl.policies.baselines:make_nutch",
    "stormcrawler": "freshcrawl.policies.baselines:make_stormcrawler",
    "heritrix": "freshcrawl.policies.baselines:make_heritrix",
    "asyncmirrorsync": "freshcrawl.policies.sync_bandit:make_asyncmirrorsync",
    "htraa": "freshcrawl.policies.automata:make_htraa",
}


def policy_names() -> list[str]:
    """Names accepted by :func:`make_policy` whose module is installed."""
    names = []
    for name, target in POLICY_FACTORIES.items():
        module_name = target.split(":")[0]
        if importlib.util.find_spec(module_name) is not None:
            names.append(name)
    return names


def make_policy(spec: str, options: PolicyOptions | None = None) -> Policy:
    """Build a policy from its name, e.g. ``"learned:sa-interval"`` or ``"nutch"``.

    Raises
    ------
    UnknownNameError
        If the name is not a known policy.
    """
    base, _, arg = spec.partition(":")
    target = POLICY_FACTORIES.get(base)
    if target is None or importlib.util.find_spec(target.split(":")[0]) is None:
        raise UnknownNameError(f"unknown policy {spec!r}; known: {', '.join(policy_names())}")
    module_name, attr = target.split(":")
    factory = getattr(importlib.import_module(module_name), attr)
    return factory(arg or None, options or PolicyOptions())
