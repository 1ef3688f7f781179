"""The channel and rule forms: they parse what the operator typed (the model's field types, lengths and
choices); the rules a channel or rule must pass run in the services (validation.py), whose errors the
view places at the fields."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from console.alerts import destinations, services
from console.alerts.models import AlertRule, Channel


class ModelValuesForm(forms.Form):
    """A form over some of a model's fields, for a service to save: it starts from the row's values (or the
    model's defaults) and hands over only what was posted, as an edit page posts every input it shows."""

    model: type[models.Model]
    model_fields: tuple[str, ...]

    def __init__(self, data: Any = None, *, instance: models.Model | None = None) -> None:
        self.instance = instance
        initial = forms.model_to_dict(instance or self.model(), fields=self.model_fields)
        super().__init__(data, initial=initial)

    def values(self) -> dict[str, Any]:
        # A field missing from the posted data keeps the row's value, as a ModelForm would keep it.
        return {name: value for name, value in self.cleaned_data.items()
                if not self[name].field.widget.value_omitted_from_data(self.data, self.files, self.add_prefix(name))}

    def place_errors(self, error: ValidationError) -> None:
        if not hasattr(error, "error_dict"):
            self.add_error(None, error)
            return
        for field, texts in error.message_dict.items():
            for text in texts:
                if field in self.fields:
                    self.add_error(field, text)
                else:
                    self.add_error(None, text if field == "__all__" else f"{field}: {text}")


_CHANNEL = forms.fields_for_model(Channel, fields=services.CHANNEL_FIELDS)


class ChannelForm(ModelValuesForm):
    model = Channel
    model_fields = services.CHANNEL_FIELDS

    name = _CHANNEL["name"]
    kind = _CHANNEL["kind"]
    # Write-only: never rendered back (render_value=False); blank on edit keeps the stored secret.
    secret = forms.CharField(label="Webhook URL or bot token", required=False, strip=True,
                             widget=forms.PasswordInput(render_value=False),
                             help_text="Stored encrypted; leave blank to keep the current one.")
    secret_env = _CHANNEL["secret_env"]
    slack_channel = _CHANNEL["slack_channel"]
    api_base_url = _CHANNEL["api_base_url"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["secret_env"].help_text = (
            f"Name of an environment variable holding the webhook URL or token; it must start with "
            f"{destinations.SECRET_ENV_PREFIX}.")
        self.fields["api_base_url"].help_text = "Bot channels only; https://slack.com/api/ unless the server allows another host."


_RULE = forms.fields_for_model(AlertRule, fields=services.RULE_FIELDS)


class RuleForm(ModelValuesForm):
    model = AlertRule
    model_fields = services.RULE_FIELDS

    name = _RULE["name"]
    kind = _RULE["kind"]
    nodepool = _RULE["nodepool"]
    metric = _RULE["metric"]
    threshold = _RULE["threshold"]
    window_minutes = _RULE["window_minutes"]
    cooldown_minutes = _RULE["cooldown_minutes"]
    channel = _RULE["channel"]
    enabled = _RULE["enabled"]
