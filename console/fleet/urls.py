from django.urls import path

from console.fleet import views

app_name = "fleet"

urlpatterns = [
    path("nodepools/", views.nodepool_list, name="nodepool-list"),
    path("nodepools/new/", views.NodePoolEditView.as_view(), name="nodepool-create"),
    path("nodepools/<str:name>/", views.nodepool_detail, name="nodepool-detail"),
    path("nodepools/<str:name>/edit/", views.NodePoolEditView.as_view(), name="nodepool-edit"),
    path("nodepools/<str:name>/scale/", views.nodepool_scale, name="nodepool-scale"),
    path("nodepools/<str:name>/delete/", views.NodePoolDeleteView.as_view(), name="nodepool-delete"),
    path("nodepools/<str:name>/export/", views.nodepool_export, name="nodepool-export"),
    path("nodeclasses/", views.nodeclass_list, name="nodeclass-list"),
    path("nodeclasses/new/", views.NodeClassEditView.as_view(), name="nodeclass-create"),
    path("nodeclasses/<str:name>/", views.nodeclass_detail, name="nodeclass-detail"),
    path("nodeclasses/<str:name>/edit/", views.NodeClassEditView.as_view(), name="nodeclass-edit"),
    path("nodeclasses/<str:name>/delete/", views.NodeClassDeleteView.as_view(), name="nodeclass-delete"),
    path("nodeclasses/<str:name>/export/", views.nodeclass_export, name="nodeclass-export"),
    path("nodeclaims/", views.nodeclaim_list, name="nodeclaim-list"),
    path("nodeclaims/<str:name>/", views.nodeclaim_detail, name="nodeclaim-detail"),
    path("decisions/", views.decision_list, name="decision-list"),
    path("decisions/<int:pk>/", views.decision_detail, name="decision-detail"),
    path("import/", views.import_yaml, name="import"),
    path("export/", views.export_all, name="export-all"),
]
