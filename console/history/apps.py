from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "console.history"
    label = "history"
    verbose_name = "History"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from console.control.signals import node_interrupted
        from console.fleet.models import ChangeRecord
        from console.history.services import interruption_heard, revision_from_change

        # NodePool and EC2NodeClass revisions come from the fleet's own change history (one ChangeRecord per
        # saved change): the history keeps the manifest each one left in force, nothing else
        post_save.connect(revision_from_change, sender=ChangeRecord, dispatch_uid="history-revisions")
        # interruptions are not visible in the cluster's objects: the interruption loop tells of each
        node_interrupted.connect(interruption_heard, dispatch_uid="history-interruptions")
