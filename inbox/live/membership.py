"""Open sockets follow who may see what *now*: receivers that tell a user's sockets to recompute their
groups when the user's teams or staff flag change, when an agent's teams change (its teams' members gain
or lose its items), and to close when the user logs out or is deactivated (inbox.web.consumers)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from inbox.live.push import membership_changed_on_commit


def user_groups_changed(sender: Any, instance: Any, action: str, reverse: bool, pk_set: Any, **kwargs: Any) -> None:
    """``User.groups`` changed, from either side (``user.groups.add(team)`` or ``team.user_set.remove(user)``)."""
    if action not in ("post_add", "post_remove", "post_clear", "pre_clear"):
        return
    if action == "pre_clear":  # the cleared side's members are gone after the clear: remember them now
        instance._inbox_cleared = (
            set(instance.user_set.values_list("pk", flat=True)) if isinstance(instance, Group) else {instance.pk}
        )
        return
    if isinstance(instance, Group):  # reverse side: the users are in pk_set
        users = set(pk_set or ()) if action != "post_clear" else getattr(instance, "_inbox_cleared", set())
    else:
        users = {instance.pk}
    membership_changed_on_commit(users)


def agent_teams_changed(sender: Any, instance: Any, action: str, pk_set: Any, **kwargs: Any) -> None:
    """``Agent.teams`` changed: every member of the teams involved may now see more or less."""
    if action == "pre_clear":
        instance._inbox_cleared_teams = (
            set(instance.teams.values_list("pk", flat=True)) if hasattr(instance, "teams") else set()
        )
        return
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if isinstance(instance, Group):
        teams = {instance.pk}
    elif action == "post_clear":
        teams = getattr(instance, "_inbox_cleared_teams", set())
    else:
        teams = set(pk_set or ())
    users = get_user_model().objects.filter(groups__in=teams).values_list("pk", flat=True).distinct()
    membership_changed_on_commit(set(users))


def user_saved(sender: Any, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any) -> None:
    """Staff flag or active flag may have changed: the user's sockets recompute (cheap when nothing did)."""
    if created:
        return
    if update_fields is not None and not {"is_staff", "is_active", "is_superuser"} & set(update_fields):
        return  # e.g. last_login on every login
    membership_changed_on_commit({instance.pk})


def user_logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    if user is not None and session is not None and session.session_key:
        membership_changed_on_commit({user.pk}, session_key=session.session_key)


def connect() -> None:
    from django.contrib.auth.signals import user_logged_out as logged_out
    from django.db.models.signals import m2m_changed, post_save

    from agents.models import Agent

    user_model = get_user_model()
    m2m_changed.connect(user_groups_changed, sender=user_model.groups.through, dispatch_uid="inbox.live.user_groups")
    m2m_changed.connect(agent_teams_changed, sender=Agent.teams.through, dispatch_uid="inbox.live.agent_teams")
    post_save.connect(user_saved, sender=user_model, dispatch_uid="inbox.live.user_saved")
    logged_out.connect(user_logged_out, dispatch_uid="inbox.live.logged_out")
