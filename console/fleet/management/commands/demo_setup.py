"""Create the role groups, the demo accounts and the demo fleet; print how to log in."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand

from console.access import OPERATOR, ROLES, VIEWER
from console.fleet.demo import demo_load


def _password(path: Path) -> str:
    # Kept in var/ so the printed login stays the same across restarts of the demo.
    if path.exists() and path.read_text().strip():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    path.write_text(password)
    path.chmod(0o600)
    return password


class Command(BaseCommand):
    help = "Create viewer/operator groups, demo accounts (demo = operator, viewer = viewer) and the demo fleet."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-fleet", action="store_true", help="Only create groups and accounts.")

    def handle(self, *args: Any, **options: Any) -> None:
        groups = {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}
        logins = []
        for username, role in (("demo", OPERATOR), ("viewer", VIEWER)):
            password = _password(Path(settings.VAR_DIR) / f"{username}-password")
            user, _ = User.objects.get_or_create(username=username)
            if not user.check_password(password):
                user.set_password(password)
                user.save()
            user.groups.add(groups[role])
            logins.append((username, password, role))
        if not options["no_fleet"]:
            operator = User.objects.get(username="demo")
            if demo_load(user=operator):
                self.stdout.write("Loaded the demo fleet (3 NodePools, 1 EC2NodeClass, 6 NodeClaims).")
            else:
                self.stdout.write("The fleet is not empty: the demo fleet was not loaded again.")
        for username, password, role in logins:
            self.stdout.write(f"Login: {username} / {password}   ({role})")
