from django.urls import path

from . import views

urlpatterns = [
    path("alerts", views.AlertSubmitView.as_view(), name="alert-submit"),
    path("alert-types", views.AlertTypesView.as_view(), name="alert-types"),
    path("sessions/<uuid:session_id>", views.SessionDetailView.as_view(), name="session-detail"),
]
