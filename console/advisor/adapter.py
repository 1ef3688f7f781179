"""The advisor run over the console's view of the cluster: the live objects and the saved fleet of a
what-if World, read by the engine's parser (console.adapters), priced with the console's catalog."""

from __future__ import annotations

from console import adapters
from console.whatif.world import World
from packing import api


def advice_from_world(world: World) -> api.Advice:
    inputs, extras = world.inputs()
    catalog = adapters.engine_catalog(pools=world.pools, nodeclasses=world.classes)
    return api.advise(api.advisor_context(world.docs(), inputs, extras, catalog))
