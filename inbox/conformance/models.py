"""Where the conformance model lives: ``inbox.models.conformance`` (every model is in the models layer)."""

from inbox.models.conformance import ConformanceObservation  # noqa: F401
