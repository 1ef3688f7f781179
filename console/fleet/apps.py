from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "console.fleet"
    label = "fleet"
    verbose_name = "Fleet"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.buffers.signals import buffer_changed
        from console.commitments.signals import commitment_changed
        from console.fleet.services import (
            buffer_change_record,
            commitment_change_record,
            overlay_change_record,
        )
        from console.overlays.signals import overlay_changed

        # the buffers', overlays' and commitments' writes go to the change history here (those apps do not import
        # this one)
        buffer_changed.connect(buffer_change_record, dispatch_uid="fleet-buffer-history")
        overlay_changed.connect(overlay_change_record, dispatch_uid="fleet-overlay-history")
        commitment_changed.connect(commitment_change_record, dispatch_uid="fleet-commitment-history")
