from django.apps import AppConfig


class CommitmentsConfig(AppConfig):
    name = "console.commitments"
    label = "commitments"
    verbose_name = "Commitments"
    default_auto_field = "django.db.models.BigAutoField"
