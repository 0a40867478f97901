"""Where the SSO models live: ``inbox.models.sso`` (every model is in the models layer)."""

from inbox.models.sso import SSOIdentity, TeamClaimMapping  # noqa: F401
