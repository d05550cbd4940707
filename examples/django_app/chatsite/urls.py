"""``/`` serves the page, ``/stream?q=...`` the Server-Sent Events of a run."""

from django.urls import path

from chatsite import views

urlpatterns = [
    path("", views.index, name="index"),
    path("stream", views.stream, name="stream"),
]
