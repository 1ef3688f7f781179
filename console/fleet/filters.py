"""Filter sets shared by the HTML lists and the API lists (one definition, as netbox does), so a
URL like ``?nodepool=default&capacity_type=spot`` means the same thing in both."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet

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


class DecisionFilterSet(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=Decision.KIND_CHOICES)
    nodepool = django_filters.CharFilter(field_name="nodepool_name", label="NodePool")
    since = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lt")

    class Meta:
        model = Decision
        fields = ["kind", "nodepool", "since", "until"]
