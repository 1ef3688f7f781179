from django.apps import AppConfig


class ControlConfig(AppConfig):
    name = "console.control"
    label = "control"
    verbose_name = "Control loops"
    default_auto_field = "django.db.models.BigAutoField"
