from django.apps import AppConfig


class TarsyConfig(AppConfig):
    """Core app. Loads and validates the configuration at startup so a broken file fails fast, and installs
    what turns the pipeline's decisions into Celery tasks."""

    name = "tarsy"
    verbose_name = "TARSy"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.llm.recorded import install_before_wait
        from agents.privacy.policy import install as install_pseudonym_store

        from . import checks  # noqa: F401  (registers the config system check)
        from .celery import install_enactor  # the Celery app, loaded with Django (Celery's Django guide)
        from .db_connections import connection_give_back
        from .pipeline.actions.guards import connect as connect_action_guards
        from .services.pseudonyms import DatabaseStore
        from .slack.receivers import connect as connect_slack

        install_enactor()
        install_pseudonym_store(DatabaseStore())
        install_before_wait(connection_give_back)  # a thread waiting on a model holds no pooled connection
        connect_slack()
        connect_action_guards()
