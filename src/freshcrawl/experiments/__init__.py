"""Reproductions of the seeds' figures, and the loops they run.

- :mod:`~freshcrawl.experiments.estimators`: seed 001's estimator experiments (Figs. 1-5).
- :mod:`~freshcrawl.experiments.sync_bandits`: seed 003's synchronization bandits (Figs. 1-4).
- :mod:`~freshcrawl.experiments.automata`: seed 004's learning automata (Figs. 5-12), on the poll loops of
  :mod:`~freshcrawl.experiments.polling` (H-TRAA and the Estimator policy in a Zipf environment).

Each is run by ``freshcrawl experiments <name>``; the entry points are re-exported here. The plots import
matplotlib only when drawn.
"""

from freshcrawl.experiments.automata import AutomataConfig, AutomataResult, run_automata_experiments
from freshcrawl.experiments.estimators import run_real_trace, run_synthetic
from freshcrawl.experiments.polling import PollingRun, simulate_estimator, simulate_htraa
from freshcrawl.experiments.sync_bandits import SyncBanditsResult, run_family

__all__ = [
    "run_synthetic",
    "run_real_trace",
    "run_family",
    "SyncBanditsResult",
    "run_automata_experiments",
    "AutomataConfig",
    "AutomataResult",
    "PollingRun",
    "simulate_htraa",
    "simulate_estimator",
]
