"""Filter sets shared by the HTML lists and the API lists (one definition, as netbox does), so a
URL like ``?nodepool=default&capacity_type=spot`` means the same thing in both."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django_filters.fields import IsoDateTimeField

from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool


class NodePoolFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    node_class = django_filters.CharFilter(field_name="node_class_name", label="NodeClass")
    consolidation_policy = django_filters.ChoiceFilter(choices=NodePool.POLICY_CHOICES)

    class Meta:
        model = NodePool
        fields = ["q", "node_class", "consolidation_policy"]

    def search(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return queryset.filter(name__icontains=value)


class EC2NodeClassFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Search")
    ami_family = django_filters.CharFilter()

    class Meta:
        model = EC2NodeClass
        fields = ["q", "ami_family"]


class NodeClaimFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    nodepool = django_filters.CharFilter(field_name="nodepool_name", label="NodePool")
    capacity_type = django_filters.ChoiceFilter(choices=NodeClaim.CAPACITY_TYPES)
    zone = django_filters.CharFilter()
    instance_type = django_filters.CharFilter()
    state = django_filters.ChoiceFilter(choices=[(s, s) for s in NodeClaim.STATES], method="filter_state", label="State")

    class Meta:
        model = NodeClaim
        fields = ["q", "nodepool", "capacity_type", "zone", "instance_type", "state"]

    def search(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return queryset.filter(Q(name__icontains=value) | Q(node_name__icontains=value)
                               | Q(instance_id__icontains=value))

    def filter_state(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return queryset.filter(NodeClaim.state_filter(value))


# PostgreSQL refuses UTC offsets beyond ±15:59 ("time zone displacement out of range"); so does the
# filter, for every database, so a bad value is the same field error everywhere instead of a 500 on one.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)


class InstantField(IsoDateTimeField):
    """An ISO 8601 instant (a naive one is UTC), returned in UTC; offsets beyond ±15:59 and instants
    outside years 1–9999 once in UTC are refused with a message naming the accepted form."""

    default_error_messages = {
        "invalid": "Enter an ISO 8601 date and time, e.g. 2026-12-01T09:30:00Z or 2026-12-01 09:30.",
        "offset": "The UTC offset must be between -15:59 and +15:59.",
    }

    def clean(self, value: Any) -> datetime | None:
        cleaned = super().clean(value)
        if cleaned is None:
            return None
        offset = cleaned.utcoffset()
        if offset is not None and abs(offset) > MAX_UTC_OFFSET:
            raise forms.ValidationError(self.error_messages["offset"], code="offset")
        try:
            return cleaned.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


class InstantFilter(django_filters.IsoDateTimeFilter):
    field_class = InstantField


class DecisionFilterSet(django_filters.FilterSet):
    """One definition for /decisions/ and /api/decisions/. An invalid value is an error, never ignored:
    the API answers 400 naming the field (DjangoFilterBackend), the page shows it at the field."""

    kind = django_filters.ChoiceFilter(choices=Decision.KIND_CHOICES, empty_label="any kind", label="Kind")
    nodepool = django_filters.CharFilter(field_name="nodepool_name", label="NodePool")
    since = InstantFilter(field_name="at", lookup_expr="gte", label="Since (UTC)",
                          help_text="From this instant on (inclusive), ISO 8601.",
                          widget=forms.TextInput(attrs={"placeholder": "2026-12-01T09:00Z"}))
    until = InstantFilter(field_name="at", lookup_expr="lt", label="Until (UTC)",
                          help_text="Before this instant, ISO 8601.",
                          widget=forms.TextInput(attrs={"placeholder": "2026-12-01T18:00Z"}))

    class Meta:
        model = Decision
        fields = ["kind", "nodepool", "since", "until"]
