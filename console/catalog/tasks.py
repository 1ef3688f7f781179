"""Catalog refresh tasks: thin, each calls one service."""

from __future__ import annotations

from celery import shared_task

from console.catalog.services import catalog_refresh


@shared_task(ignore_result=True, time_limit=600, soft_time_limit=540)
def refresh_catalog() -> None:
    catalog_refresh(kind="full")


@shared_task(ignore_result=True, time_limit=300, soft_time_limit=270)
def refresh_spot_prices() -> None:
    catalog_refresh(kind="spot")
