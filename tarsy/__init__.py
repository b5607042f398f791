"""TARSy's Django project and core app. Importing the package loads nothing: each entry point (tarsy.asgi,
tarsy.celery, manage.py, tarsy.mcp_server) names its process's settings before Django reads them, and the app's
`ready()` loads the Celery app so `shared_task` binds to it."""
