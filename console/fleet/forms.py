"""Forms for NodePools and EC2NodeClasses.

Forms only parse what the operator typed into Karpenter-shaped values; every rule is checked
once, by the model through the service. The inputs come from the field table (fieldtable.py): one per
field, with its label, help and initial value there. The service's errors come back keyed by field and by a
path inside it (``[1].values``), and :func:`place_errors` puts each one next to the input that
holds it — the right row of the right inline table.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from django import forms
from django.core.exceptions import ValidationError

from console.fleet import fieldtable, validation
from console.fleet.models import EC2NodeClass, NodePool
from packing.api import load_one

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


# --- fields from the table --------------------------------------------------------------------------

def _initial(default: Any) -> Any:
    # An empty default needs no initial value (and a select then marks no option, as without one).
    return None if default is fieldtable.UNSET or default in (None, "", [], {}) else copy.deepcopy(default)


def _input(widget: fieldtable.Widget, *, label: str, help_text: str = "", required: bool = False,
           initial: Any = None, choices: fieldtable.Choices = (), max_length: int | None = None,
           datalist: str = "") -> forms.Field:
    """The form field for one input of the table."""
    kinds = fieldtable.Widget
    common: dict[str, Any] = {"label": label, "help_text": help_text, "initial": initial}
    if widget is kinds.TEXT:
        attrs = {"list": datalist} if datalist else None
        return forms.CharField(required=required, max_length=max_length, widget=forms.TextInput(attrs=attrs),
                               **common)
    if widget is kinds.TEXTAREA:
        return forms.CharField(required=required, widget=forms.Textarea(attrs={"rows": 4, "class": "mono"}), **common)
    if widget is kinds.NUMBER:
        return forms.IntegerField(required=required, **common)
    if widget is kinds.SELECT:
        return forms.ChoiceField(required=required, choices=list(choices), **common)
    if widget is kinds.NULL_BOOLEAN:
        return forms.NullBooleanField(required=False, widget=forms.Select(choices=list(choices)), **common)
    if widget is kinds.KEY_VALUES:
        return KeyValueField(**common)
    if widget is kinds.YAML_LIST:
        return YamlListField(**common)
    raise ValueError(f"{widget} is not one input")


def table_inputs(fields: Iterable[fieldtable.FieldSpec]) -> dict[str, forms.Field]:
    """The form fields of a table, in its order: one per field, one per part of a PARTS field, none for ROWS."""
    inputs: dict[str, forms.Field] = {}
    for spec in fields:
        if spec.widget is fieldtable.Widget.ROWS:
            continue
        if spec.widget is fieldtable.Widget.PARTS:
            for part in spec.parts:
                inputs[part.name] = _input(part.widget, label=part.label, choices=part.choices)
            continue
        names = spec.kind in (fieldtable.Kind.NAME, fieldtable.Kind.REFERENCE)
        inputs[spec.name] = _input(spec.widget, label=spec.label, help_text=spec.help, required=spec.required,
                                   initial=_initial(spec.default), choices=spec.choices,
                                   max_length=fieldtable.NAME_MAX_LENGTH if names else None,
                                   datalist=spec.datalist)
    return inputs


# --- NodePool ---------------------------------------------------------------------------------------

# The NodePool's one-value inputs, one per table field; its list fields are edited as rows (NODEPOOL_ROWS).
_NodePoolInputs: type[forms.Form] = type("_NodePoolInputs", (forms.Form,),
                                         {"__module__": __name__, **table_inputs(fieldtable.NODEPOOL_FIELDS)})


class NodePoolForm(_NodePoolInputs):  # type: ignore[misc, valid-type]
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["name"].disabled = True


class ScaleForm(forms.Form):
    """The scale action of a static NodePool's page: a new spec.replicas (the model checks the rules)."""

    replicas = forms.IntegerField(label="Replicas", min_value=0)
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


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
_FORMSETS: dict[fieldtable.Kind, type[forms.BaseFormSet]] = {
    fieldtable.Kind.REQUIREMENTS: RequirementFormSet, fieldtable.Kind.TAINTS: TaintFormSet,
    fieldtable.Kind.BUDGETS: BudgetFormSet,
}

# NodePool list fields edited as inline rows: field name -> (formset class, prefix)
NODEPOOL_ROWS: dict[str, tuple[type[forms.BaseFormSet], str]] = {
    spec.name: (_FORMSETS[spec.kind], spec.rows_prefix)
    for spec in fieldtable.NODEPOOL_FIELDS if spec.widget is fieldtable.Widget.ROWS}
_ROW_FIELD_NAMES = {"minValues": "min_values"}


class NodePoolEditor:
    """The NodePool form and its four inline tables, bound and validated together."""

    def __init__(self, data: Any = None, *, instance: NodePool | None = None) -> None:
        self.instance = instance
        values = instance.field_values() if instance else fieldtable.defaults(fieldtable.NODEPOOL_FIELDS)
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

# The parts of the fields edited through several inputs: field -> {input name: key in the field's mapping}.
_PARTS: dict[str, dict[str, str]] = {spec.name: {part.name: part.key for part in spec.parts}
                                     for spec in fieldtable.NODECLASS_FIELDS if spec.widget is fieldtable.Widget.PARTS}
_NodeClassInputs: type[forms.Form] = type("_NodeClassInputs", (forms.Form,),
                                          {"__module__": __name__, **table_inputs(fieldtable.NODECLASS_FIELDS)})


class NodeClassForm(_NodeClassInputs):  # type: ignore[misc, valid-type]
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

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
        for field, parts in _PARTS.items():
            for form_key, spec_key in parts.items():
                initial[form_key] = (values[field] or {}).get(spec_key)
        initial["revision"] = nodeclass.revision
        return initial

    def values(self) -> dict[str, Any]:
        data = self.cleaned_data
        values = {spec.name: data[spec.name] for spec in fieldtable.NODECLASS_FIELDS if spec.name not in _PARTS}
        if self.instance is not None:
            values["name"] = self.instance.name
        for field, parts in _PARTS.items():
            # Keep the settings the form does not show (kubelet evictionSoft, clusterDNS…) as they were.
            stored = (getattr(self.instance, field) or {}) if self.instance is not None else {}
            mapping = {k: v for k, v in stored.items() if k not in parts.values()}
            for form_key, spec_key in parts.items():
                if data.get(form_key) not in (None, "", {}):
                    mapping[spec_key] = data[form_key]
            values[field] = mapping
        return values

    def place_errors(self, error: ValidationError) -> None:
        if not hasattr(error, "error_dict"):
            self.add_error(None, error)
            return
        for field, messages in error.message_dict.items():
            for message in messages:
                target: str | None = field if field in self.fields else None
                if field in _PARTS:
                    # ".systemReserved.cpu: ..." -> the input of systemReserved
                    key = message.lstrip(".").split(".", 1)[0].split(":", 1)[0]
                    target = {v: k for k, v in _PARTS[field].items()}.get(key)
                    # A rule on the whole mapping that quotes its keys ("'name' and 'id' are mutually
                    # exclusive") goes to each input it names.
                    quoted = [name for name, part_key in _PARTS[field].items() if f"'{part_key}'" in message]
                    if target is None and quoted:
                        for name in quoted:
                            self.add_error(name, message)
                        continue
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
    convert = forms.BooleanField(required=False, label="Convert legacy objects",
                                 help_text="Convert v1alpha5 Provisioners, v1alpha1 AWSNodeTemplates and v1beta1 "
                                           "NodePools / EC2NodeClasses to v1 first, and show what changed.")

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
