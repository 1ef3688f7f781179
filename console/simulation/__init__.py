"""The simulated cluster and cloud behind the embedded default and the demo.

SimulatedCluster (a ClusterBackend) and SimulatedCloud (a CloudProvider) keep every object in the
database, so the demo survives restarts and several Celery workers see one world. simulation_tick()
moves that world forward: instances boot and register as Nodes, a small scheduler binds pods, the
demo workloads follow a compressed day, spot capacity is reclaimed.
"""
