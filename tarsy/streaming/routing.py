from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import path

from .consumer import EventsConsumer

websocket_urlpatterns = [path("ws", EventsConsumer.as_asgi())]


def build_application(http_app):
    # Origin is checked in the consumer against allowed_ws_origins and ALLOWED_HOSTS (see streaming.auth).
    websocket = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
    return ProtocolTypeRouter({"http": http_app, "websocket": websocket})
