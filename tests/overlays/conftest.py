"""The fleet's users, clients and small fleet, shared with the NodeOverlay tests."""

from tests.fleet.conftest import (  # noqa: F401 - fixtures
    anon_client,
    nodeclass,
    nodepool,
    operator_client,
    operator_user,
    viewer_client,
    viewer_user,
)
