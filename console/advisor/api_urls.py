from django.urls import path

from console.advisor.api import AdvisorView

urlpatterns = [path("advisor/", AdvisorView.as_view(), name="advisor")]
