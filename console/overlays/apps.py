from django.apps import AppConfig


class OverlaysConfig(AppConfig):
    name = "console.overlays"
    label = "overlays"
    verbose_name = "NodeOverlays"
    default_auto_field = "django.db.models.BigAutoField"
