"""Where the policy models live: ``inbox.models.policies`` (every model is in the models layer)."""

from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest, PolicyMatch  # noqa: F401
