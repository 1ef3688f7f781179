from django.views.generic import ListView

from console.fleet.models import NodePool


class NodePoolListView(ListView):
    model = NodePool
