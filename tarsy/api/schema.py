"""OpenAPI description of the configured authentication.

Programs authenticate with a token (auth mode token) or through the auth proxy (mode proxy); the dashboard's
browser uses its Django session cookie (CSRF-protected) — not described here, it is not for API clients.
In mode none (loopback only) no credentials are needed.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ConfiguredAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "tarsy.api.auth.ConfiguredAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <key>` (auth mode token; create one with `manage.py create_api_token NAME`)"}
