from django.apps import AppConfig


class ReplayConfig(AppConfig):
    name = "console.replay"
    label = "replay"
    verbose_name = "Replay"
    default_auto_field = "django.db.models.BigAutoField"
