"""Where the decision-link model lives: ``inbox.models.links`` (every model is in the models layer)."""

from inbox.models.links import DecisionLinkUse  # noqa: F401
