from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "console.fleet"
    label = "fleet"
    verbose_name = "Fleet"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.buffers.signals import buffer_changed
        from console.fleet.services import buffer_change_record

        # the buffers' writes go to the change history here (console.buffers does not import this app)
        buffer_changed.connect(buffer_change_record, dispatch_uid="fleet-buffer-history")
