from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "console.fleet"
    label = "fleet"
    verbose_name = "Fleet"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.buffers.signals import buffer_changed
        from console.fleet.services import buffer_change_record

        # the buffers' writes go to the change history here (that app does not import this one); NodeOverlays and
        # Commitments, which build on the fleet, connect their own signals to it (their AppConfig.ready)
        buffer_changed.connect(buffer_change_record, dispatch_uid="fleet-buffer-history")
