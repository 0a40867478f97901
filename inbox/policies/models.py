"""Where the policy models live: ``inbox.models.policies`` (every model is in the models layer)."""

from inbox.models.policies import Policy, PolicyMatch  # noqa: F401
