from django.apps import AppConfig


class BuffersConfig(AppConfig):
    name = "console.buffers"
    label = "buffers"
    verbose_name = "Capacity buffers"
    default_auto_field = "django.db.models.BigAutoField"
