"""Forms for NodePools and EC2NodeClasses.

Forms only parse what the operator typed into Karpenter-shaped values; every rule is checked
once, by the model through the service. The service's errors come back keyed by field and by a
path inside it (``[1].values``), and :func:`place_errors` puts each one next to the input that
holds it — the right row of the right inline table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from django import forms
from django.core.exceptions import ValidationError

from console.fleet import validation
from console.fleet.models import EC2NodeClass, NodePool
from packing.yamlinput import load_one

_ROW_PATH = re.compile(r"^\[(\d+)\](?:\.(\w+))?(?:\[\d+\])?: (.*)$", re.S)


# --- small text formats ----------------------------------------------------------------------------

def parse_key_values(text: str) -> dict[str, str]:
    """``key=value`` per line (blank lines and ``#`` comments ignored)."""
    result: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise ValidationError(f"line {number}: expected key=value, got {line!r}")
        key = key.strip()
        if key in result:
            raise ValidationError(f"line {number}: {key!r} is given twice")
        result[key] = value.strip()
    return result


def format_key_values(mapping: Mapping[str, Any] | None) -> str:
    return "\n".join(f"{k}={v}" for k, v in (mapping or {}).items())


def parse_yaml_list(text: str) -> list[Any]:
    if not text.strip():
        return []
    try:
        value = load_one(text)  # the shared bounded reader: tags, aliases and duplicate keys are input errors
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = str(getattr(exc, "problem", None) or exc).splitlines()[0]
        raise ValidationError(f"not valid YAML{where}: {problem[:200]}") from None
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError("must be a YAML list, e.g. '- tags: {karpenter.sh/discovery: my-cluster}'")
    return value


def format_yaml(value: Any) -> str:
    if not value:
        return ""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False)


def _split_values(text: str) -> list[str]:
    return [v.strip() for v in re.split(r"[,\n]", text) if v.strip()]


class KeyValueField(forms.CharField):
    widget = forms.Textarea(attrs={"rows": 3, "class": "mono", "placeholder": "key=value, one per line"})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return format_key_values(value) if isinstance(value, Mapping) else value

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        return parse_key_values(super().to_python(value) or "")


class YamlListField(forms.CharField):
    widget = forms.Textarea(attrs={"rows": 4, "class": "mono"})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return format_yaml(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[Any]:  # type: ignore[override]
        return parse_yaml_list(super().to_python(value) or "")


# --- NodePool ---------------------------------------------------------------------------------------

class NodePoolForm(forms.Form):
    name = forms.CharField(max_length=63, help_text="Becomes the karpenter.sh/nodepool label; cannot change later.")
    node_class_name = forms.CharField(label="EC2NodeClass", max_length=63,
                                      widget=forms.TextInput(attrs={"list": "nodeclass-names"}))
    weight = forms.IntegerField(required=False, help_text="1-100; higher-weight pools are tried first.")
    template_labels = KeyValueField(label="Node labels")
    template_annotations = KeyValueField(label="Node annotations")
    limits = KeyValueField(help_text="cpu=1000, memory=1000Gi, nvidia.com/gpu=8, nodes=50")
    expire_after = forms.CharField(initial="720h", help_text="Duration (720h) or Never.")
    termination_grace_period = forms.CharField(required=False, help_text="Optional, e.g. 48h.")
    consolidation_policy = forms.ChoiceField(choices=NodePool.POLICY_CHOICES, initial=NodePool.POLICY_WHEN_UNDERUTILIZED)
    consolidate_after = forms.CharField(initial="0s", help_text="Duration (30s, 5m) or Never.")
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["name"].disabled = True


class RequirementForm(forms.Form):
    key = forms.CharField(required=False, widget=forms.TextInput(attrs={"list": "label-keys", "class": "mono"}))
    operator = forms.ChoiceField(choices=[(o, o) for o in validation.OPERATORS], initial="In")
    values = forms.CharField(required=False, widget=forms.TextInput(attrs={"class": "mono"}),
                             help_text="comma-separated")
    min_values = forms.IntegerField(required=False, label="minValues")

    def to_value(self) -> dict[str, Any] | None:
        data = self.cleaned_data
        if not data or not data.get("key"):
            return None
        req: dict[str, Any] = {"key": data["key"].strip(), "operator": data["operator"],
                               "values": _split_values(data.get("values") or "")}
        if data["operator"] in ("Exists", "DoesNotExist") and not req["values"]:
            del req["values"]
        if data.get("min_values") is not None:
            req["minValues"] = data["min_values"]
        return req

    @staticmethod
    def initial_from(req: Mapping[str, Any]) -> dict[str, Any]:
        return {"key": req.get("key", ""), "operator": req.get("operator", "In"),
                "values": ", ".join(req.get("values") or []), "min_values": req.get("minValues")}


class TaintForm(forms.Form):
    key = forms.CharField(required=False, widget=forms.TextInput(attrs={"class": "mono"}))
    value = forms.CharField(required=False, widget=forms.TextInput(attrs={"class": "mono"}))
    effect = forms.ChoiceField(choices=[(e, e) for e in validation.TAINT_EFFECTS])

    def to_value(self) -> dict[str, Any] | None:
        data = self.cleaned_data
        if not data or not data.get("key"):
            return None
        taint = {"key": data["key"].strip(), "effect": data["effect"]}
        if data.get("value"):
            taint["value"] = data["value"].strip()
        return taint

    @staticmethod
    def initial_from(taint: Mapping[str, Any]) -> dict[str, Any]:
        return {"key": taint.get("key", ""), "value": taint.get("value", ""), "effect": taint.get("effect")}


class BudgetForm(forms.Form):
    nodes = forms.CharField(required=False, help_text="count or percent")
    schedule = forms.CharField(required=False, widget=forms.TextInput(attrs={"class": "mono", "placeholder": "0 9 * * mon-fri"}))
    duration = forms.CharField(required=False, widget=forms.TextInput(attrs={"placeholder": "8h"}))
    reasons = forms.MultipleChoiceField(required=False, choices=[(r, r) for r in validation.BUDGET_REASONS],
                                        widget=forms.CheckboxSelectMultiple)

    def to_value(self) -> dict[str, Any] | None:
        data = self.cleaned_data
        if not data or not (data.get("nodes") or data.get("schedule") or data.get("duration")):
            return None
        budget: dict[str, Any] = {"nodes": (data.get("nodes") or "").strip()}
        if data.get("schedule"):
            budget["schedule"] = data["schedule"].strip()
        if data.get("duration"):
            budget["duration"] = data["duration"].strip()
        if data.get("reasons"):
            budget["reasons"] = list(data["reasons"])
        return budget

    @staticmethod
    def initial_from(budget: Mapping[str, Any]) -> dict[str, Any]:
        return {"nodes": budget.get("nodes", ""), "schedule": budget.get("schedule", ""),
                "duration": budget.get("duration", ""), "reasons": budget.get("reasons") or []}


RequirementFormSet = forms.formset_factory(RequirementForm, extra=1, can_delete=True)
TaintFormSet = forms.formset_factory(TaintForm, extra=1, can_delete=True)
BudgetFormSet = forms.formset_factory(BudgetForm, extra=1, can_delete=True)

# NodePool list fields edited as inline rows: field name -> (formset class, prefix)
NODEPOOL_ROWS: dict[str, tuple[type[forms.BaseFormSet], str]] = {
    "requirements": (RequirementFormSet, "req"),
    "taints": (TaintFormSet, "taint"),
    "startup_taints": (TaintFormSet, "stainit"),
    "budgets": (BudgetFormSet, "budget"),
}
_ROW_FIELD_NAMES = {"minValues": "min_values"}


class NodePoolEditor:
    """The NodePool form and its four inline tables, bound and validated together."""

    def __init__(self, data: Any = None, *, instance: NodePool | None = None) -> None:
        self.instance = instance
        values = instance.field_values() if instance else {"budgets": [{"nodes": "10%"}]}
        initial = {k: values.get(k) for k in NodePoolForm.base_fields if k in values}
        if instance:
            initial["revision"] = instance.revision
        self.form = NodePoolForm(data, initial=initial, editing=instance is not None)
        self.formsets: dict[str, forms.BaseFormSet] = {}
        for field, (formset_class, prefix) in NODEPOOL_ROWS.items():
            form_class = formset_class.form
            rows = [form_class.initial_from(v) for v in values.get(field) or []]  # type: ignore[attr-defined]
            # Initial rows only for rendering: on a bound formset Django would treat a posted row
            # equal to its initial as "unchanged" and drop it.
            self.formsets[field] = formset_class(data, prefix=prefix, initial=rows if data is None else None)
        # For each list field, the row forms that produced the values, in order (to place errors).
        self._sources: dict[str, list[forms.Form]] = {}

    def is_valid(self) -> bool:
        ok = self.form.is_valid()
        for formset in self.formsets.values():
            ok = formset.is_valid() and ok
        return ok

    def values(self) -> dict[str, Any]:
        data = dict(self.form.cleaned_data)
        data.pop("revision", None)
        if self.instance:
            data["name"] = self.instance.name
        for field, formset in self.formsets.items():
            items, sources = [], []
            for row in formset.forms:
                if row.cleaned_data.get("DELETE"):
                    continue
                value = row.to_value()  # type: ignore[attr-defined]
                if value is not None:
                    items.append(value)
                    sources.append(row)
            data[field] = items
            self._sources[field] = sources
        return data

    @property
    def expected_revision(self) -> int | None:
        return self.form.cleaned_data.get("revision")

    def place_errors(self, error: ValidationError) -> None:
        place_errors(error, self.form, self._sources)

    @property
    def has_errors(self) -> bool:
        return bool(self.form.errors) or any(
            fs.non_form_errors() or any(f.errors for f in fs.forms) for fs in self.formsets.values())


def place_errors(error: ValidationError, form: forms.Form, sources: Mapping[str, list[forms.Form]]) -> None:
    """Attach service/model errors to the input that caused them."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for field, messages in error.message_dict.items():
        for message in messages:
            rows = sources.get(field)
            match = _ROW_PATH.match(message) if rows is not None else None
            if match and rows is not None and int(match.group(1)) < len(rows):
                row = rows[int(match.group(1))]
                sub = _ROW_FIELD_NAMES.get(match.group(2) or "", match.group(2) or "")
                row.add_error(sub if sub in row.fields else None, match.group(3))
            elif field in form.fields:
                form.add_error(field, message)
            else:
                form.add_error(None, f"{field}: {message}" if field != "__all__" else message)


# --- EC2NodeClass -----------------------------------------------------------------------------------

class NodeClassForm(forms.Form):
    name = forms.CharField(max_length=63)
    ami_family = forms.ChoiceField(required=False, choices=[("", "(from alias)")] + [(f, f) for f in validation.AMI_FAMILIES])
    ami_selector_terms = YamlListField(help_text="e.g. - alias: al2023@latest")
    subnet_selector_terms = YamlListField(help_text="e.g. - tags: {karpenter.sh/discovery: my-cluster}")
    security_group_selector_terms = YamlListField(help_text="e.g. - tags: {karpenter.sh/discovery: my-cluster}")
    role = forms.CharField(required=False, help_text="IAM role name for the instance profile Karpenter creates.")
    instance_profile = forms.CharField(required=False, help_text="Or an existing instance profile (not both).")
    tags = KeyValueField(label="EC2 tags")
    block_device_mappings = YamlListField(help_text="e.g. - deviceName: /dev/xvda\n  ebs: {volumeSize: 100Gi, volumeType: gp3}")
    kubelet_max_pods = forms.IntegerField(required=False, label="kubelet maxPods")
    kubelet_pods_per_core = forms.IntegerField(required=False, label="kubelet podsPerCore")
    kubelet_system_reserved = KeyValueField(label="kubelet systemReserved")
    kubelet_kube_reserved = KeyValueField(label="kubelet kubeReserved")
    kubelet_eviction_hard = KeyValueField(label="kubelet evictionHard")
    http_endpoint = forms.ChoiceField(required=False, choices=[("", "(default: enabled)"), ("enabled", "enabled"), ("disabled", "disabled")])
    http_protocol_ipv6 = forms.ChoiceField(required=False, label="httpProtocolIPv6",
                                           choices=[("", "(default: disabled)"), ("enabled", "enabled"), ("disabled", "disabled")])
    http_put_response_hop_limit = forms.IntegerField(required=False, label="httpPutResponseHopLimit")
    http_tokens = forms.ChoiceField(required=False, choices=[("", "(default: required)"), ("required", "required"), ("optional", "optional")])
    user_data = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4, "class": "mono"}))
    instance_store_policy = forms.ChoiceField(required=False, choices=[("", "(none)"), ("RAID0", "RAID0")],
                                              help_text="RAID0: use the local NVMe instance store for ephemeral storage.")
    detailed_monitoring = forms.NullBooleanField(required=False, widget=forms.Select(
        choices=[("unknown", "(default: off)"), ("true", "on"), ("false", "off")]))
    associate_public_ip_address = forms.NullBooleanField(required=False, label="Associate public IP address", widget=forms.Select(
        choices=[("unknown", "(subnet default)"), ("true", "yes"), ("false", "no")]))
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    KUBELET = {"kubelet_max_pods": "maxPods", "kubelet_pods_per_core": "podsPerCore",
               "kubelet_system_reserved": "systemReserved", "kubelet_kube_reserved": "kubeReserved",
               "kubelet_eviction_hard": "evictionHard"}
    METADATA = {"http_endpoint": "httpEndpoint", "http_protocol_ipv6": "httpProtocolIPv6",
                "http_put_response_hop_limit": "httpPutResponseHopLimit", "http_tokens": "httpTokens"}

    def __init__(self, *args: Any, instance: EC2NodeClass | None = None, **kwargs: Any) -> None:
        self.instance = instance
        if instance is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_from(instance)
        super().__init__(*args, **kwargs)
        if instance is not None:
            self.fields["name"].disabled = True

    @classmethod
    def initial_from(cls, nodeclass: EC2NodeClass) -> dict[str, Any]:
        values = nodeclass.field_values()
        initial = {k: values[k] for k in cls.base_fields if k in values}
        for form_key, spec_key in cls.KUBELET.items():
            initial[form_key] = (nodeclass.kubelet or {}).get(spec_key)
        for form_key, spec_key in cls.METADATA.items():
            initial[form_key] = (nodeclass.metadata_options or {}).get(spec_key)
        initial["revision"] = nodeclass.revision
        return initial

    def values(self) -> dict[str, Any]:
        data = self.cleaned_data
        values = {k: data[k] for k in ("name", "ami_family", "ami_selector_terms", "subnet_selector_terms",
                                       "security_group_selector_terms", "role", "instance_profile", "tags",
                                       "block_device_mappings", "user_data", "instance_store_policy",
                                       "detailed_monitoring", "associate_public_ip_address")}
        if self.instance is not None:
            values["name"] = self.instance.name
            # Keep kubelet settings the form does not show (evictionSoft, clusterDNS…) as they were.
            kubelet = {k: v for k, v in (self.instance.kubelet or {}).items() if k not in self.KUBELET.values()}
        else:
            kubelet = {}
        for form_key, spec_key in self.KUBELET.items():
            if data.get(form_key) not in (None, "", {}):
                kubelet[spec_key] = data[form_key]
        values["kubelet"] = kubelet
        values["metadata_options"] = {spec_key: data[form_key] for form_key, spec_key in self.METADATA.items()
                                      if data.get(form_key) not in (None, "")}
        return values

    def place_errors(self, error: ValidationError) -> None:
        if not hasattr(error, "error_dict"):
            self.add_error(None, error)
            return
        reverse_kubelet = {v: k for k, v in self.KUBELET.items()}
        reverse_metadata = {v: k for k, v in self.METADATA.items()}
        for field, messages in error.message_dict.items():
            for message in messages:
                target: str | None = field if field in self.fields else None
                if field == "kubelet":
                    key = message.lstrip(".").split(".", 1)[0].split(":", 1)[0]
                    target = reverse_kubelet.get(key)
                elif field == "metadata_options":
                    key = message.lstrip(".").split(":", 1)[0]
                    target = reverse_metadata.get(key)
                if target is None and field == "__all__":
                    self.add_error(None, message)
                elif target is None:
                    self.add_error(None, f"{field}: {message}")
                else:
                    self.add_error(target, message)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def clean(self, data: Any, initial: Any = None) -> list[Any]:  # type: ignore[override]
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(item, initial) for item in data]
        return [super().clean(data, initial)] if data else []


class ImportForm(forms.Form):
    text = forms.CharField(required=False, label="Paste YAML",
                           widget=forms.Textarea(attrs={"rows": 14, "class": "mono",
                                                        "placeholder": "apiVersion: karpenter.sh/v1\nkind: NodePool\n..."}))
    files = MultipleFileField(required=False, label="…or upload files",
                            widget=MultipleFileInput(attrs={"accept": ".yaml,.yml,.json"}))
    dry_run = forms.BooleanField(required=False, label="Validate only (save nothing)")

    def sources(self, uploaded: Iterable[Any]) -> list[tuple[str, str]]:
        return yaml_sources(uploaded, self.cleaned_data.get("text", ""))


def yaml_sources(uploaded: Iterable[Any], pasted: str, *, max_bytes: int | None = None) -> list[tuple[str, str]]:
    """(name, text) of each uploaded file, then of the pasted YAML: what the import and snapshot forms hand to
    the YAML readers. Files over max_bytes in total are refused before they are decoded (the limit protects
    memory too)."""
    result: list[tuple[str, str]] = []
    total = 0
    for upload in uploaded:
        total += upload.size or 0
        if max_bytes is not None and total > max_bytes:
            raise ValidationError(f"{upload.name}: the snapshot exceeds {max_bytes // 2**20} MB")
        try:
            result.append((upload.name, upload.read().decode("utf-8")))
        except UnicodeDecodeError:
            raise ValidationError(f"{upload.name}: not UTF-8 text") from None
    if pasted.strip():
        result.append(("pasted YAML", pasted))
    if not result:
        raise ValidationError("Paste YAML or choose at least one file.")
    return result
