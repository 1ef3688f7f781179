from __future__ import annotations

from django.apps import AppConfig


class OverlaysConfig(AppConfig):
    name = "console.overlays"
    label = "overlays"
    verbose_name = "NodeOverlays"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported and exported with the NodePools: the fleet's import takes the kind from this registration
        from console.fleet.services import OtherKind, import_kind_register, overlay_change_record
        from console.overlays import manifests, selectors, services
        from console.overlays.signals import overlay_changed

        import_kind_register(kind=manifests.KIND, other=OtherKind(
            manifests.API_VERSION, manifests.fields_from_manifest, services.overlay_import_check, services.overlay_import_apply,
            services.overlays_export, selectors.overlay_list))
        # its writes go to the fleet's change history
        overlay_changed.connect(overlay_change_record, dispatch_uid="fleet-overlay-history")
