"""Settings for mypy's Django plugin, which sets Django up to read the models: the real settings, with the
embedded Redis marked as not in use so that type-checking starts no server."""

from config.settings import *  # noqa: F403

EMBEDDED_REDIS = False
