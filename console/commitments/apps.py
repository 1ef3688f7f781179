from __future__ import annotations

from django.apps import AppConfig


class CommitmentsConfig(AppConfig):
    name = "console.commitments"
    label = "commitments"
    verbose_name = "Commitments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # imported and exported with the NodePools: the fleet's import takes the kind from this registration
        from console.commitments import manifests, selectors, services
        from console.commitments.signals import commitment_changed
        from console.fleet.services import OtherKind, commitment_change_record, import_kind_register

        import_kind_register(kind=manifests.KIND, other=OtherKind(
            manifests.API_VERSION, manifests.fields_from_manifest, services.commitment_import_check, services.commitment_import_apply,
            services.commitments_export, selectors.commitment_list))
        # its writes go to the fleet's change history
        commitment_changed.connect(commitment_change_record, dispatch_uid="fleet-commitment-history")
