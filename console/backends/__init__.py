"""Backends behind small interfaces: the cluster (Kubernetes or simulated) and the cloud (AWS or
simulated). Nothing here imports Django models; the control loops pass plain values in."""
