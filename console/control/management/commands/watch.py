"""`manage.py watch`: stream pod events and provision as soon as a batch of pods becomes
unschedulable. Beat still runs provision every 10 s, so nothing is missed if this process dies; this
only makes reaction faster."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand

from console.backends.factory import cloud_provider, cluster_backend
from console.backends.kubernetes import Watcher
from console.control.batching import PendingBatcher, is_unschedulable
from console.control.provisioning import provision_run


class Command(BaseCommand):
    help = "Watch pods and run the provision loop when newly unschedulable pods have been batched."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--idle", type=float, default=1.0, help="quiet time that closes a batch (s)")
        parser.add_argument("--max-wait", type=float, default=10.0, help="longest a batch waits (s)")
        parser.add_argument("--timeout", type=int, default=60, help="server-side watch timeout (s)")

    def handle(self, *args: Any, **options: Any) -> None:
        cluster = cluster_backend()
        batcher = PendingBatcher(idle=options["idle"], max_wait=options["max_wait"])
        stop = threading.Event()
        watcher = Watcher(cluster.list_pods, cluster.watch_pods, timeout_seconds=options["timeout"],
                          stop_event=stop, name="pods", emit_initial=True)

        def shutdown(signum: int, frame: Any) -> None:
            try:
                watcher.stop()
            except ValueError:
                # The signal landed while the stream's generator was running: the stop flag is set,
                # and the loop ends at the next event or poll.
                stop.set()

        signal.signal(signal.SIGTERM, shutdown)
        signal.signal(signal.SIGINT, shutdown)

        def flush() -> None:
            while not stop.is_set():
                if batcher.due(time.monotonic()):
                    batcher.reset()
                    outcome = provision_run(cluster=cluster, cloud=cloud_provider())
                    self.stdout.write(f"provision: {outcome.pending} pending, launched {len(outcome.launched)}"
                                      + (f", {outcome.skipped}" if outcome.skipped else ""))
                stop.wait(0.2)

        flusher = threading.Thread(target=flush, name="provision-batcher", daemon=True)
        flusher.start()
        self.stdout.write("watching pods (Ctrl-C to stop)")
        for event in watcher:
            if stop.is_set():
                break
            if event.type != "DELETED" and is_unschedulable(event.object):
                batcher.add(time.monotonic())
        stop.set()
        flusher.join(5)
