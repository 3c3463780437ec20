"""Learning the crawl allocation directly, without estimating change rates first.

- Synchronization bandits (Kolobov, Bubeck, Zimmert, ICML 2020; seed 003): cost processes and the exact
  optimum of Problem 1 (:mod:`~freshcrawl.learning.sync_costs`), MirrorSync (Alg. 1), AsyncMirrorSync
  (Alg. 2) and AsyncPSGDSync (:mod:`~freshcrawl.learning.mirror_sync`).
- Learning automata for web polling (Granmo, Oommen; seed 004): TRAA (:mod:`~freshcrawl.learning.traa`),
  H-TRAA (:mod:`~freshcrawl.learning.htraa`) and the classical polling policies
  (:mod:`~freshcrawl.learning.polling_policies`).
"""

from __future__ import annotations

from freshcrawl.learning.htraa import HTRAA, n_leaves_for
from freshcrawl.learning.mirror_sync import (
    ArmSchedule,
    AsyncMirrorSync,
    AsyncPSGDSync,
    MirrorSync,
    SyncProblem,
    SyncRunResult,
    gradient_sample,
    mirror_descent_step,
    projected_sgd_step,
    schedule_arm_plays,
)
from freshcrawl.learning.polling_policies import (
    estimate_update_prob,
    estimator_polling,
    optimal_polling,
    proportional_polling,
    uniform_polling,
)
from freshcrawl.learning.sync_costs import (
    CustomCost,
    PoissonBinaryCost,
    PolynomialCost,
    SyncCostObjective,
    SyncCostProcess,
    SyncOptimum,
    optimal_policy_cost,
    policy_cost,
    policy_cost_gradient,
)
from freshcrawl.learning.traa import TRAA, UPDATE_MODES, parse_update_mode

__all__ = [
    # synchronization bandits (seed 003): costs and the optimum, then the algorithms
    "SyncCostProcess", "PolynomialCost", "PoissonBinaryCost", "CustomCost", "SyncCostObjective", "SyncOptimum",
    "policy_cost", "policy_cost_gradient", "optimal_policy_cost",
    "SyncProblem", "ArmSchedule", "SyncRunResult", "MirrorSync", "AsyncMirrorSync", "AsyncPSGDSync",
    "gradient_sample", "schedule_arm_plays", "mirror_descent_step", "projected_sgd_step",
    # learning automata (seed 004)
    "TRAA", "UPDATE_MODES", "parse_update_mode", "HTRAA", "n_leaves_for",
    "uniform_polling", "proportional_polling", "estimator_polling", "optimal_polling", "estimate_update_prob",
]
