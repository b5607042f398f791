from tests.integration.conftest import config_dir, scripted_config, worker  # noqa: F401  (shared fixtures)
