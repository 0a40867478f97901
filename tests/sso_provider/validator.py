"""Standard claims plus ``groups`` (the provider's Django groups), as a company's IdP would send them."""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "groups"}

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "preferred_username": user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }
