from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import transaction
from django.db.models.deletion import ProtectedError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.access import require_operator
from console.alerts import services
from console.alerts.forms import ChannelForm, RuleForm
from console.alerts.models import AlertEvent, AlertRule, Channel


def channel_list(request: HttpRequest) -> HttpResponse:
    return render(request, "alerts/channel_list.html", {"channels": Channel.objects.all()})


def _edit(request: HttpRequest, form_class: Any, instance: Any, template: str, done: str) -> HttpResponse:
    require_operator(request)
    form = form_class(request.POST or None, instance=instance)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():  # nothing half-saved
            obj = form.save()
        messages.success(request, f"Saved {obj}.")
        return redirect(done)
    return render(request, template, {"form": form, "object": instance})


def channel_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=pk) if pk else None
    return _edit(request, ChannelForm, channel, "alerts/channel_form.html", "alerts:channel-list")


def rule_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    rule = get_object_or_404(AlertRule, pk=pk) if pk else None
    return _edit(request, RuleForm, rule, "alerts/rule_form.html", "alerts:rule-list")


@require_POST
def channel_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require_operator(request)
    channel = get_object_or_404(Channel, pk=pk)
    try:
        channel.delete()
        messages.success(request, f"Deleted channel {channel.name}.")
    except ProtectedError:
        messages.error(request, f"Channel {channel.name} is used by rules; move or delete them first.")
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
    rule.delete()
    messages.success(request, f"Deleted rule {rule.name}.")
    return redirect("alerts:rule-list")


def history(request: HttpRequest) -> HttpResponse:
    events = AlertEvent.objects.select_related("channel")
    if request.GET.get("rule", "").isdigit():
        events = events.filter(rule_id=int(request.GET["rule"]))
    return render(request, "alerts/history.html", {"events": events[:200]})
