"""Pages of the alerts app: views parse the request, call one service and render; the writes and their
rules live in services.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.access import require_operator
from console.alerts import services
from console.alerts.forms import ChannelForm, ModelValuesForm, RuleForm
from console.alerts.models import AlertEvent, AlertRule, Channel


def channel_list(request: HttpRequest) -> HttpResponse:
    return render(request, "alerts/channel_list.html", {"channels": Channel.objects.all()})


def _edit(request: HttpRequest, form: ModelValuesForm, save: Callable[[dict[str, Any]], Model],
          template: str, done: str) -> HttpResponse:
    require_operator(request)
    instance = form.instance
    if request.method == "POST" and form.is_valid():
        try:
            obj = save(form.values())
        except ValidationError as exc:
            form.place_errors(exc)
            if instance is not None:
                instance.refresh_from_db()  # the page names the row as saved, not as typed
        else:
            messages.success(request, f"Saved {obj}.")
            return redirect(done)
    return render(request, template, {"form": form, "object": instance})


def channel_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=pk) if pk else None

    def save(values: dict[str, Any]) -> Channel:
        if channel is None:
            return services.channel_create(values=values)
        return services.channel_update(channel=channel, values=values)

    form = ChannelForm(request.POST or None, instance=channel)
    return _edit(request, form, save, "alerts/channel_form.html", "alerts:channel-list")


def rule_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    rule = get_object_or_404(AlertRule, pk=pk) if pk else None

    def save(values: dict[str, Any]) -> AlertRule:
        if rule is None:
            return services.rule_create(values=values)
        return services.rule_update(rule=rule, values=values)

    form = RuleForm(request.POST or None, instance=rule)
    return _edit(request, form, save, "alerts/rule_form.html", "alerts:rule-list")


@require_POST
def channel_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require_operator(request)
    channel = get_object_or_404(Channel, pk=pk)
    try:
        services.channel_delete(channel=channel)
        messages.success(request, f"Deleted channel {channel.name}.")
    except services.ChannelInUse as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("alerts:channel-list")


@require_POST
def channel_test(request: HttpRequest, pk: int) -> HttpResponse:
    require_operator(request)
    channel = get_object_or_404(Channel, pk=pk)
    event = services.send_test(channel)
    if event.delivered:
        messages.success(request, f"Test message sent to {channel.name}.")
    else:
        messages.error(request, f"Test message to {channel.name} failed: {event.delivery_error}")
    return redirect("alerts:channel-list")


def rule_list(request: HttpRequest) -> HttpResponse:
    rules = AlertRule.objects.select_related("channel").prefetch_related("states")
    return render(request, "alerts/rule_list.html", {"rules": rules})


@require_POST
def rule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require_operator(request)
    rule = get_object_or_404(AlertRule, pk=pk)
    services.rule_delete(rule=rule)
    messages.success(request, f"Deleted rule {rule.name}.")
    return redirect("alerts:rule-list")


def history(request: HttpRequest) -> HttpResponse:
    events = AlertEvent.objects.select_related("channel")
    if request.GET.get("rule", "").isdigit():
        events = events.filter(rule_id=int(request.GET["rule"]))
    return render(request, "alerts/history.html", {"events": events[:200]})
