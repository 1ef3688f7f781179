"""Channels and rules are written only by the services, which validate every write: the pages and the API
are thin callers of channel_*/rule_* (their own tests are in test_pages_api.py and test_channel_safety.py)."""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from console.alerts import services
from console.alerts.models import AlertRule, Channel
from console.fleet.models import NodePool

HOOK = "https://hooks.slack.com/services/T000/B000/secret-hook"
THIN_MODULES = ["views.py", "forms.py", "serializers.py", "api.py"]
WRITES = {"save", "delete", "create", "update", "bulk_create", "bulk_update", "get_or_create", "update_or_create"}


def rule_values(channel: Channel, **overrides: Any) -> dict[str, Any]:
    return {"name": "spend", "kind": AlertRule.BUDGET, "metric": "cost_per_hour", "threshold": Decimal("5"),
            "channel": channel, **overrides}


def errors(excinfo: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return excinfo.value.message_dict


@pytest.mark.parametrize("module", THIN_MODULES)
def test_views_forms_serializers_and_api_write_nothing_themselves(module: str) -> None:
    tree = ast.parse((Path(services.__file__).parent / module).read_text())
    calls = [node.func.attr for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES]
    assert calls == [], f"console/alerts/{module} writes through {calls}: call a service instead"


@pytest.mark.django_db
def test_channel_create_encrypts_the_secret_and_refuses_at_the_field() -> None:
    channel = services.channel_create(values={"name": "ops", "kind": Channel.WEBHOOK, "secret": f"  {HOOK} "})
    assert channel.pk and HOOK not in channel.secret_encrypted and channel.get_secret() == HOOK
    assert channel.api_base_url == "https://slack.com/api/"  # the model's default for an absent field
    with pytest.raises(ValidationError) as excinfo:
        services.channel_create(values={"name": "ops", "kind": Channel.BOT, "secret": "nope",
                                        "api_base_url": "https://slack.com/api"})
    assert errors(excinfo) == {
        "slack_channel": ["A bot channel needs a Slack channel id."],
        "secret": ["A bot token starts with xoxb-."],
        "api_base_url": ["Must end with '/' (slack_sdk joins method names onto it)."],
        "name": ["Channel with this Name already exists."],
    }
    with pytest.raises(ValidationError) as excinfo:
        services.channel_create(values={"name": "empty", "kind": Channel.WEBHOOK})
    assert errors(excinfo) == {"secret": ["Give a webhook URL / token, or an env var name."]}
    assert list(Channel.objects.values_list("name", flat=True)) == ["ops"]


@pytest.mark.django_db
def test_channel_update_keeps_the_stored_secret_unless_given_or_moved_to_the_environment() -> None:
    channel = services.channel_create(values={"name": "ops", "kind": Channel.WEBHOOK, "secret": HOOK})
    services.channel_update(channel=channel, values={"name": "ops-2", "secret": ""})
    channel.refresh_from_db()
    assert channel.name == "ops-2" and channel.get_secret() == HOOK
    with pytest.raises(ValidationError) as excinfo:
        services.channel_update(channel=channel, values={"secret_env": "SECRET_KEY"})
    assert list(errors(excinfo)) == ["secret_env"] and "LOADMASTER_SLACK_" in errors(excinfo)["secret_env"][0]
    channel.refresh_from_db()
    assert channel.secret_env == "" and channel.get_secret() == HOOK
    services.channel_update(channel=channel, values={"secret_env": "LOADMASTER_SLACK_OPS"})
    channel.refresh_from_db()
    assert (channel.secret_env, channel.secret_encrypted, channel.secret_hint) == ("LOADMASTER_SLACK_OPS", "", "")


@pytest.mark.django_db
def test_a_channel_in_use_is_not_deleted() -> None:
    channel = services.channel_create(values={"name": "ops", "kind": Channel.WEBHOOK, "secret": HOOK})
    rule = services.rule_create(values=rule_values(channel))
    with pytest.raises(services.ChannelInUse):
        services.channel_delete(channel=channel)
    assert Channel.objects.filter(pk=channel.pk).exists()
    services.rule_delete(rule=rule)
    services.channel_delete(channel=channel)
    assert not Channel.objects.exists() and not AlertRule.objects.exists()


@pytest.mark.django_db
def test_rule_writes_are_validated_and_a_deleted_pool_scope_may_stay() -> None:
    channel = services.channel_create(values={"name": "ops", "kind": Channel.WEBHOOK, "secret": HOOK})
    with pytest.raises(ValidationError) as excinfo:
        services.rule_create(values=rule_values(channel, kind=AlertRule.EFFICIENCY, metric="forecast",
                                                threshold=Decimal("150"), window_minutes=0, nodepool=" gone "))
    assert errors(excinfo) == {
        "nodepool": ["There is no NodePool named 'gone'; leave empty for the whole cluster."],
        "metric": ["Efficiency rules watch CPU or memory."],
        "threshold": ["A percentage between 0 and 100."],
        "window_minutes": ["This rule needs a window of at least one minute."],
    }
    assert not AlertRule.objects.exists()
    NodePool.objects.create(name="general")
    rule = services.rule_create(values=rule_values(channel, nodepool="general"))
    assert (rule.nodepool, rule.window_minutes, rule.enabled) == ("general", 10, True)
    NodePool.objects.all().delete()
    services.rule_update(rule=rule, values={"enabled": False})  # the stored scope stays editable
    rule.refresh_from_db()
    assert not rule.enabled and rule.nodepool == "general"
    with pytest.raises(ValidationError) as excinfo:
        services.rule_update(rule=rule, values={"nodepool": "other", "threshold": Decimal("-1")})
    assert list(errors(excinfo)) == ["nodepool", "threshold"]
    with pytest.raises(TypeError):
        services.rule_update(rule=rule, values={"states": []})
