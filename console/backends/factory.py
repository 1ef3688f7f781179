"""Build the configured backends from settings (LOADMASTER_CLUSTER, LOADMASTER_CLOUD)."""

from __future__ import annotations

from django.conf import settings

from console.backends.base import CloudProvider, ClusterBackend


def cluster_backend() -> ClusterBackend:
    if settings.LOADMASTER_CLUSTER == "kubernetes":
        from console.backends.kubernetes import KubernetesCluster

        return KubernetesCluster.from_environment(settings.LOADMASTER_KUBECONFIG, context=settings.LOADMASTER_KUBE_CONTEXT)
    from console.simulation.cluster import SimulatedCluster

    return SimulatedCluster()


def cloud_provider() -> CloudProvider:
    if settings.LOADMASTER_CLOUD == "aws":
        from console.backends.aws import AWSCloudProvider, ClusterInfo

        info = None
        if settings.LOADMASTER_CLUSTER_ENDPOINT and settings.LOADMASTER_CLUSTER_CA:
            info = ClusterInfo(name=settings.LOADMASTER_CLUSTER_NAME, endpoint=settings.LOADMASTER_CLUSTER_ENDPOINT,
                               certificate_authority=settings.LOADMASTER_CLUSTER_CA,
                               service_cidr=settings.LOADMASTER_CLUSTER_SERVICE_CIDR)
        return AWSCloudProvider(region=settings.LOADMASTER_AWS_REGION, cluster_name=settings.LOADMASTER_CLUSTER_NAME,
                                queue_url=settings.LOADMASTER_SQS_QUEUE_URL, endpoint_url=settings.LOADMASTER_AWS_ENDPOINT_URL,
                                kubernetes_version=settings.LOADMASTER_KUBERNETES_VERSION, cluster=info)
    from console.simulation.cloud import SimulatedCloud

    return SimulatedCloud()
