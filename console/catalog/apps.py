from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "console.catalog"
    label = "catalog"
    verbose_name = "Instance catalog"
    default_auto_field = "django.db.models.BigAutoField"
