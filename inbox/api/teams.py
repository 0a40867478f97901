"""Team review API: claim, unclaim and assign an item; snooze it for oneself; comments on items and runs."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.auth import AgentTokenAuthentication, IsAgent, request_agent
from agents.models import Agent
from inbox import access
from inbox.api.listing import BoundedPagination
from inbox.api.serializers import ItemSerializer
from inbox.core.errors import ERROR_SCHEMA, ApplicationError, StrictCharField, StrictIntegerField, read_input
from inbox.decisions.rules import check_visible
from inbox.limits import MAX_DISCUSSION_COMMENT, MAX_ESCALATION_MINUTES
from inbox.models import BusinessHours, Comment, EscalationRule, Notice, NotificationPreference
from inbox.teams import away, escalations, hours, outbox, preferences
from inbox.teams.claims import assignee_named, item_assign, item_claim, item_unclaim
from inbox.teams.comments import record_comment
from inbox.teams.snooze import item_snooze, item_unsnooze

RULE_CODES = dict.fromkeys(
    ["team", "agent", "step", "afterMinutes", "beforeDeadlineMinutes", "toTeam", "toUser", "enabled"],
    "invalid_escalation_rule",
)


class ClaimResponseSerializer(ItemSerializer):
    """The item, and while you are away the two keys that say it went to your delegate (absent otherwise)."""

    delegatedTo = serializers.CharField(  # noqa: N815 (the wire name)
        required=False, help_text="While you are away: the username of your delegate, who now holds the item."
    )
    delegationMessage = serializers.CharField(  # noqa: N815 (the wire name)
        required=False,
        help_text="While you are away: where the item went, in a sentence "
        "('You are away: carl, your delegate, holds this item.'). The item's own `message` is untouched.",
    )

    class Meta(ItemSerializer.Meta):
        fields = [*ItemSerializer.Meta.fields, "delegatedTo", "delegationMessage"]


class ItemClaimApi(APIView):
    action = "claim"

    @extend_schema(
        summary='Claim an item ("I\'m on it")',
        description=(
            "While you are away the item goes to your delegate: `claimedBy` names them, and the answer adds "
            "`delegatedTo` and a `delegationMessage` saying so."
        ),
        request=None,
        responses={
            200: ClaimResponseSerializer,
            404: OpenApiResponse(description="Not visible"),
            409: OpenApiResponse(description="Held by someone else, or no longer open"),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        item = (item_claim if self.action == "claim" else item_unclaim)(item_id=pk, user=request.user)
        data = dict(ItemSerializer(item, context={"request": request}).data)
        if self.action == "claim" and item.claimed_by is not None and item.claimed_by_id != request.user.pk:
            # You are away: the item went to your delegate, and the answer says so.
            holder = item.claimed_by.get_username()
            data["delegatedTo"] = holder
            data["delegationMessage"] = f"You are away: {holder}, your delegate, holds this item."
        return Response(data)


class ItemUnclaimApi(ItemClaimApi):
    action = "unclaim"

    @extend_schema(summary="Release a claim (the holder or staff)", request=None, responses={200: ItemSerializer})
    def post(self, request: Request, pk: int) -> Response:
        return super().post(request, pk)


class AssignInputSerializer(serializers.Serializer):
    assignee = StrictCharField(help_text="The username of an active teammate who can see the item.")


class ItemAssignApi(APIView):
    @extend_schema(
        summary="Assign an item to a teammate",
        request=AssignInputSerializer,
        responses={200: ItemSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        check_visible(pk, request.user)
        body = read_input(AssignInputSerializer, request.data, codes={"assignee": "invalid_assignee"})
        item = item_assign(item_id=pk, user=request.user, assignee=assignee_named(body["assignee"]))
        return Response(ItemSerializer(item, context={"request": request}).data)


class CommentSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Comment
        fields = ["id", "user", "body", "created_at"]


class CommentInputSerializer(serializers.Serializer):
    body = StrictCharField(max_length=MAX_DISCUSSION_COMMENT, trim_whitespace=False)


class CommentsApi(APIView):
    """GET lists, POST adds a comment on an item (``target="item"``) or a run (``target="run"``)."""

    target = "item"

    def _target(self, request: Request, pk: int):
        if self.target == "item":
            return get_object_or_404(access.visible_items(request.user), pk=pk)
        return get_object_or_404(access.visible_runs(request.user), pk=pk)

    @extend_schema(summary="Discussion on an item or run", responses={200: CommentSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        target = self._target(request, pk)
        comments = target.comments.select_related("user")
        return Response(CommentSerializer(comments, many=True).data)

    @extend_schema(
        summary="Add a comment",
        request=CommentInputSerializer,
        responses={201: CommentSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        target = self._target(request, pk)
        body = read_input(CommentInputSerializer, request.data, codes={"body": "invalid_comment"})
        comment = record_comment(user=request.user, body=body["body"], **{self.target: target})
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)


class SnoozeInputSerializer(serializers.Serializer):
    until = StrictCharField(
        max_length=64,
        help_text="`1h` (in one hour), `tomorrow` (9:00 tomorrow, server time), `expiry` (the reminder lead before "
        "the item must be decided), or an ISO 8601 date and time. A time past the deadline is brought forward to "
        "that (`clamped` in the answer).",
    )


class SnoozeSerializer(serializers.Serializer):
    item = serializers.IntegerField(help_text="The item's id")
    until = serializers.DateTimeField(help_text="When the item comes back to your Open list and you are reminded")
    clamped = serializers.BooleanField(help_text="The time asked for was past the deadline and was brought forward")
    deadline = serializers.DateTimeField(help_text="When the item must be decided by (its run's earliest expiry)")


class ItemSnoozeApi(APIView):
    """POST snoozes the item for the caller (their Open list only); DELETE brings it back."""

    @extend_schema(
        summary="Snooze an item for yourself until a time (never past its deadline)",
        request=SnoozeInputSerializer,
        responses={
            200: SnoozeSerializer,
            400: OpenApiResponse(description="`until` is not a preset or a future time, or the item expires too soon"),
            404: OpenApiResponse(description="Not visible"),
            409: OpenApiResponse(description="No longer open"),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        check_visible(pk, request.user)
        body = read_input(SnoozeInputSerializer, request.data, codes={"until": "invalid_snooze"})
        _snooze, when = item_snooze(item_id=pk, user=request.user, choice=body["until"])
        data = {"item": pk, "until": when.until, "clamped": when.clamped, "deadline": when.deadline}
        return Response(SnoozeSerializer(data).data)

    @extend_schema(
        summary="Unsnooze an item (back to your Open list now)",
        request=None,
        responses={204: OpenApiResponse(description="Unsnoozed, or was not snoozed"), 404: OpenApiResponse()},
    )
    def delete(self, request: Request, pk: int) -> Response:
        item_unsnooze(item_id=pk, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- escalation rules -----------------------------------------------------------------------------


class EscalationRuleSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", allow_null=True, default=None)
    agent = serializers.CharField(source="agent.slug", allow_null=True, default=None)
    afterMinutes = serializers.IntegerField(source="after_minutes", allow_null=True)
    beforeDeadlineMinutes = serializers.IntegerField(source="before_deadline_minutes", allow_null=True)
    toTeam = serializers.CharField(source="to_team.name", allow_null=True, default=None)
    toUser = serializers.CharField(source="to_user.username", allow_null=True, default=None)
    why = serializers.CharField(help_text='What an escalated item says: "no decision from Billing in 30 min".')
    createdAt = serializers.DateTimeField(source="created_at")
    grantsAccess = serializers.SerializerMethodField(
        help_text="The target may not decide the scope's items otherwise: the rule is a grant of access (staff's)."
    )
    note = serializers.SerializerMethodField(help_text="What the rule changes in who may decide, in words.")

    def get_grantsAccess(self, rule: EscalationRule) -> bool:  # noqa: N802
        return escalations.grants_access(rule)

    def get_note(self, rule: EscalationRule) -> str:
        return escalations.rule_note(rule)

    class Meta:
        model = EscalationRule
        fields = [
            "id",
            "team",
            "agent",
            "step",
            "afterMinutes",
            "beforeDeadlineMinutes",
            "toTeam",
            "toUser",
            "enabled",
            "why",
            "createdAt",
            "grantsAccess",
            "note",
        ]


class EscalationRuleInputSerializer(serializers.Serializer):
    team = StrictCharField(required=False, help_text="The team whose items the rule watches (its name).")
    agent = StrictCharField(required=False, help_text="Or the agent whose items it watches (its slug).")
    step = StrictIntegerField(required=False, default=1, min_value=1, max_value=2, help_text="1, or 2 up the chain.")
    afterMinutes = StrictIntegerField(required=False, min_value=1, max_value=MAX_ESCALATION_MINUTES)
    beforeDeadlineMinutes = StrictIntegerField(required=False, min_value=1, max_value=MAX_ESCALATION_MINUTES)
    toTeam = StrictCharField(required=False, help_text="The team added to the deciders (its name).")
    toUser = StrictCharField(required=False, help_text="Or the person added (their username).")
    enabled = serializers.BooleanField(required=False, default=True)


def _one_of(body: dict, first: str, second: str) -> str:
    given = [name for name in (first, second) if body.get(name) not in (None, "")]
    if len(given) != 1:
        field = given[1] if len(given) == 2 else first
        raise ApplicationError.invalid(
            field, f"give exactly one of {first} or {second}", code="invalid_escalation_rule"
        )
    return given[0]


def _named(model, field: str, lookup: str, value: str, **extra):
    found = model.objects.filter(**{lookup: value}, **extra).first()
    if found is None:
        raise ApplicationError.invalid(field, f"no such {field}: {value!r}", code="invalid_escalation_rule")
    return found


def rule_fields(body: dict, *, agent_caller: bool) -> dict:
    """The validated body as the rule's model fields, each name resolved (400 naming the field otherwise)."""
    fields: dict = {"step": body["step"], "enabled": body["enabled"], "team": None, "agent": None}
    if agent_caller:
        for field in ("team", "agent"):
            if body.get(field):
                message = "an agent's token sets rules on the agent's own items: leave it out"
                raise ApplicationError.invalid(field, message, code="invalid_escalation_rule")
        for field in ("toUser", "toTeam"):
            if body.get(field):
                message = "an agent's token names no people or teams: the agent's team or staff set its rules"
                raise ApplicationError.invalid(field, message, code="invalid_escalation_rule")
    else:
        scope = _one_of(body, "team", "agent")
        if scope == "team":
            fields["team"] = _named(Group, "team", "name", body["team"])
        else:
            fields["agent"] = _named(Agent, "agent", "slug", body["agent"])
    trigger = _one_of(body, "afterMinutes", "beforeDeadlineMinutes")
    fields["after_minutes"] = body["afterMinutes"] if trigger == "afterMinutes" else None
    fields["before_deadline_minutes"] = body["beforeDeadlineMinutes"] if trigger != "afterMinutes" else None
    target = _one_of(body, "toTeam", "toUser")
    fields["to_team"] = _named(Group, "toTeam", "name", body["toTeam"]) if target == "toTeam" else None
    fields["to_user"] = (
        _named(get_user_model(), "toUser", "username", body["toUser"], is_active=True) if target == "toUser" else None
    )
    return fields


class RuleCallerMixin:
    """The caller of the rules API: a person, or (``agent_caller``) the agent whose token authenticated."""

    agent_caller = False

    def _actor(self, request: Request):
        return request_agent(request) if self.agent_caller else request.user


class EscalationRuleListApi(RuleCallerMixin, APIView):
    """A person's rules (their teams' and their agents'); with an agent's token, the agent's own."""

    @extend_schema(summary="Escalation rules you may change", responses={200: EscalationRuleSerializer(many=True)})
    def get(self, request: Request) -> Response:
        rules = escalations.rules_visible_to(self._actor(request))
        return Response(EscalationRuleSerializer(rules, many=True).data)

    @extend_schema(
        summary="Add an escalation rule step",
        description=(
            "Exactly one scope (`team` name or `agent` slug; an agent's token sets its own), one trigger "
            "(`afterMinutes` after arrival or `beforeDeadlineMinutes` before the deadline) and one target "
            "(`toTeam` name or `toUser` username). `step` 2 fires on items its scope's step 1 escalated. The target "
            "must already decide the scope's items (a member of the team, of one of the agent's teams, or staff), "
            "unless staff set the rule: then it is audited as a grant of access (`grantsAccess`). An agent's token "
            "names no target (400 naming `toUser` or `toTeam`)."
        ),
        request=EscalationRuleInputSerializer,
        responses={
            201: EscalationRuleSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A field is invalid; `field` names it."),
            403: OpenApiResponse(
                ERROR_SCHEMA,
                description="Not a member of the team, or not the agent; or (not staff) the target may not decide the "
                "scope's items already (`field` names it)",
            ),
            409: OpenApiResponse(ERROR_SCHEMA, description="The scope has this step already"),
        },
        examples=[
            OpenApiExample(
                "Finance leads after 30 minutes",
                request_only=True,
                value={"team": "Billing", "afterMinutes": 30, "toTeam": "Finance leads"},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        body = read_input(EscalationRuleInputSerializer, request.data, codes=RULE_CODES)
        fields = rule_fields(body, agent_caller=self.agent_caller)
        rule = escalations.escalation_rule_create(actor=self._actor(request), fields=fields)
        return Response(EscalationRuleSerializer(rule).data, status=status.HTTP_201_CREATED)


class EscalationRuleDetailApi(RuleCallerMixin, APIView):
    @extend_schema(summary="One escalation rule", responses={200: EscalationRuleSerializer})
    def get(self, request: Request, pk: int) -> Response:
        rule = get_object_or_404(escalations.rules_visible_to(self._actor(request)), pk=pk)
        return Response(EscalationRuleSerializer(rule).data)

    @extend_schema(
        summary="Delete an escalation rule step (and the steps after it)",
        request=None,
        responses={204: None, 404: OpenApiResponse(ERROR_SCHEMA, description="Not yours to change")},
    )
    def delete(self, request: Request, pk: int) -> Response:
        actor = self._actor(request)
        rule = get_object_or_404(escalations.rules_visible_to(actor), pk=pk)
        escalations.escalation_rule_delete(actor=actor, rule=rule)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentEscalationRuleListApi(EscalationRuleListApi):
    """The agent's own rules, with its ingest token (``Authorization: Bearer``)."""

    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]
    agent_caller = True


class AgentEscalationRuleDetailApi(EscalationRuleDetailApi):
    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]
    agent_caller = True


# --- business hours (``inbox.teams.hours``): the Escalation rules page's card -------------------------------


class BusinessHoursSerializer(serializers.Serializer):
    team = serializers.CharField(source="team.name", help_text="The team that keeps these hours (its name).")
    days = serializers.CharField(help_text="ISO weekdays as digits, Monday 1 to Sunday 7: 12345 is Monday to Friday.")
    opens = serializers.TimeField(format="%H:%M", help_text="When the team opens, in its time zone (HH:MM).")
    closes = serializers.TimeField(format="%H:%M", help_text="When it closes, the same day (HH:MM).")
    timeZone = serializers.CharField(source="time_zone", help_text="An IANA name, e.g. Europe/Berlin.")  # noqa: N815
    words = serializers.SerializerMethodField(help_text='As the page says it: "Mon–Fri 09:00–17:00 Europe/Berlin".')

    def get_words(self, business_hours: BusinessHours) -> str:
        return hours.hours_words(business_hours)


class BusinessHoursInputSerializer(serializers.Serializer):
    days = StrictCharField(max_length=7, help_text="ISO weekdays as digits, each once: 12345 is Monday to Friday.")
    opens = serializers.TimeField(help_text="HH:MM, in the team's time zone.")
    closes = serializers.TimeField(help_text="HH:MM, after opens, the same day.")
    timeZone = StrictCharField(max_length=64, help_text="An IANA name, e.g. Europe/Berlin.")  # noqa: N815


HOURS_CODES = dict.fromkeys(["days", "opens", "closes", "timeZone"], "invalid")


def _team_named(name: str) -> Group:
    team = Group.objects.filter(name=name).first()
    if team is None:
        raise ApplicationError(404, "not_found", f"No team {name!r}.")
    return team


class BusinessHoursListApi(APIView):
    """The business hours of the teams you may set them for: staff, every team's; a lead, their teams'."""

    @extend_schema(
        summary="Business hours of the teams you lead (staff: every team)",
        description=(
            "Outside a team's hours nothing of its items escalates and no expiry reminder goes out; an escalation's "
            "minutes count only inside them. A team without hours works around the clock and is not listed. "
            "Someone who leads no team gets an empty list."
        ),
        responses={200: BusinessHoursSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        teams = hours.teams_whose_hours(request.user)
        kept = BusinessHours.objects.filter(team__in=teams).select_related("team").order_by("team__name")
        return Response(BusinessHoursSerializer(kept, many=True).data)


class BusinessHoursDetailApi(APIView):
    @extend_schema(
        summary="Set a team's business hours (staff, or the team's lead)",
        description="Replaces any hours the team kept; audited as `team.hours_set`.",
        request=BusinessHoursInputSerializer,
        responses={
            200: BusinessHoursSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`field` names the wrong one (days, closes, timeZone)"),
            403: OpenApiResponse(ERROR_SCHEMA, description="You are not staff and do not lead the team"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such team"),
        },
        examples=[
            OpenApiExample(
                "Office hours in Berlin",
                request_only=True,
                value={"days": "12345", "opens": "09:00", "closes": "17:00", "timeZone": "Europe/Berlin"},
            )
        ],
    )
    def put(self, request: Request, team: str) -> Response:
        group = _team_named(team)
        if not hours.may_set_hours(request.user, group):
            raise ApplicationError.invalid("team", f"you do not lead {group.name}", code="not_allowed", status=403)
        body = read_input(BusinessHoursInputSerializer, request.data, codes=HOURS_CODES)
        saved = hours.hours_set(
            user=request.user,
            team=group,
            days=body["days"],
            opens=body["opens"],
            closes=body["closes"],
            time_zone=body["timeZone"],
        )
        return Response(BusinessHoursSerializer(saved).data)

    @extend_schema(
        summary="The team works around the clock again (staff, or the team's lead)",
        description="Audited as `team.hours_cleared` when the team kept hours.",
        request=None,
        responses={
            204: None,
            403: OpenApiResponse(ERROR_SCHEMA, description="You are not staff and do not lead the team"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such team"),
        },
    )
    def delete(self, request: Request, team: str) -> Response:
        hours.hours_clear(user=request.user, team=_team_named(team))
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- notification preferences (``inbox.teams.preferences``): the Notifications page's first card ------------


class PreferencesSerializer(serializers.Serializer):
    emailMode = serializers.ChoiceField(  # noqa: N815 (the wire name)
        source="email_mode",
        choices=NotificationPreference.Mode.choices,
        help_text="How you hear about new items: immediate (an e-mail each), digest (a periodic one) or off.",
    )
    email = serializers.CharField(source="user.email", help_text="Where the e-mails go; empty: none can reach you.")
    digestLastSentAt = serializers.DateTimeField(source="digest_last_sent_at", allow_null=True)  # noqa: N815
    teams = serializers.SerializerMethodField(help_text="The names of your teams, whose items you hear about.")

    def get_teams(self, prefs: NotificationPreference) -> list[str]:
        return list(prefs.user.groups.order_by("name").values_list("name", flat=True))


class PreferencesInputSerializer(serializers.Serializer):
    emailMode = serializers.ChoiceField(choices=NotificationPreference.Mode.choices)  # noqa: N815


class PreferencesApi(APIView):
    """Your notification preferences, as the Notifications page shows and sets them."""

    @extend_schema(summary="Your notification preferences", responses={200: PreferencesSerializer})
    def get(self, request: Request) -> Response:
        return Response(PreferencesSerializer(preferences.preferences_of(request.user)).data)

    @extend_schema(
        summary="Set how you hear about new items",
        description="A change is audited as `preferences.changed`; the mode already in force writes nothing.",
        request=PreferencesInputSerializer,
        responses={
            200: PreferencesSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`emailMode` is invalid"),
        },
        examples=[OpenApiExample("A daily digest", request_only=True, value={"emailMode": "digest"})],
    )
    def put(self, request: Request) -> Response:
        body = read_input(PreferencesInputSerializer, request.data, codes={"emailMode": "invalid"})
        prefs = preferences.preferences_set_email_mode(user=request.user, mode=body["emailMode"])
        return Response(PreferencesSerializer(prefs).data)


# --- away and delegation ----------------------------------------------------------------------------


# ``from`` is a Python keyword: the two serializers are built with their fields named as the API names them.
AwayInputSerializer = type(
    "AwayInputSerializer",
    (serializers.Serializer,),
    {
        "from": serializers.DateTimeField(help_text="When you are away from (ISO 8601)."),
        "until": serializers.DateTimeField(help_text="When you are back (ISO 8601): after `from`, in the future."),
        "delegate": StrictCharField(help_text="The username of the active person who decides for you meanwhile."),
    },
)
AwaySerializer = type(
    "AwaySerializer",
    (serializers.Serializer,),
    {
        "user": serializers.CharField(source="user.username"),
        "from": serializers.DateTimeField(source="starts_at"),
        "until": serializers.DateTimeField(source="ends_at"),
        "delegate": serializers.CharField(source="delegate.username"),
        "inForce": serializers.BooleanField(source="in_force", help_text="The away period has begun and not ended."),
    },
)
AWAY_CODES = dict.fromkeys(["from", "until", "delegate"], "invalid_away")


class AwayApi(APIView):
    """Your away status: GET it, PUT it (replacing any), DELETE it (you are back)."""

    @extend_schema(
        summary="Your away status, in force or to come",
        responses={200: AwaySerializer, 404: OpenApiResponse(ERROR_SCHEMA, description="You are not marked away")},
    )
    def get(self, request: Request) -> Response:
        status_ = away.away_status_of(request.user)
        if status_ is None:
            raise ApplicationError(404, "not_away", "You are not marked away.")
        return Response(AwaySerializer(status_).data)

    @extend_schema(
        summary="Mark yourself away and name a delegate",
        description=(
            "Items assigned to you or held by you from `from` until `until` go to `delegate`, who is held to the "
            "rules of deciding (an item whose action they asked for is released for the team instead)."
        ),
        request=AwayInputSerializer,
        responses={200: AwaySerializer, 400: OpenApiResponse(ERROR_SCHEMA, description="`field` names the wrong one")},
        examples=[
            OpenApiExample(
                "A week off",
                request_only=True,
                value={"from": "2026-12-21T09:00:00Z", "until": "2026-12-28T09:00:00Z", "delegate": "bob"},
            )
        ],
    )
    def put(self, request: Request) -> Response:
        body = read_input(AwayInputSerializer, request.data, codes=AWAY_CODES)
        delegate = get_user_model().objects.filter(username=body["delegate"], is_active=True).first()
        if delegate is None:
            raise ApplicationError.invalid("delegate", f"no active user {body['delegate']!r}", code="invalid_away")
        status_ = away.away_set(
            user=request.user, starts_at=body["from"], ends_at=body["until"], delegate=delegate, set_by=request.user
        )
        return Response(AwaySerializer(status_).data)

    @extend_schema(summary="You are back", request=None, responses={204: None})
    def delete(self, request: Request) -> Response:
        away.away_clear(user=request.user, set_by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class NoticeSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(
        source="key", help_text="The notice's id: the e-mail's Message-ID, a webhook's Idempotency-Key."
    )
    status = serializers.ChoiceField(
        choices=["waiting", "sending", "retrying", "sent", "failed"],
        help_text="retrying: an attempt failed (lastError) and another comes at nextAttemptAt.",
    )
    lastError = serializers.CharField(source="last_error")
    nextAttemptAt = serializers.DateTimeField(source="next_attempt_at")
    retryUntil = serializers.DateTimeField(source="retry_until")
    createdAt = serializers.DateTimeField(source="created_at")
    sentAt = serializers.DateTimeField(source="sent_at", allow_null=True)

    class Meta:
        model = Notice
        fields = [
            "id",
            "kind",
            "channel",
            "to",
            "subject",
            "status",
            "attempts",
            "lastError",
            "nextAttemptAt",
            "retryUntil",
            "createdAt",
            "sentAt",
        ]


class NoticeListApi(generics.ListAPIView):
    """Your notices (the e-mails the inbox wrote to you), newest first, with how each went."""

    serializer_class = NoticeSerializer
    pagination_class = BoundedPagination

    @extend_schema(summary="Your notices and how each went (sent, retrying with its last error, failed)")
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return outbox.notices_of(self.request.user)
