"""Test users in the console's roles, shared by the page, API and loop tests."""

from __future__ import annotations

from django.contrib.auth.models import Group, User


def make_user(username: str, role: str | None, *, password: str | None = None) -> User:
    user = User.objects.create_user(username=username, password=password or f"secret-{username}")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user
