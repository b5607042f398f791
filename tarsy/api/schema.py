"""OpenAPI description of the configured authentication (token header or session cookie)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ConfiguredAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "tarsy.api.auth.ConfiguredAuthentication"
    name = ["tokenAuth", "cookieAuth"]

    def get_security_definition(self, auto_schema):
        return [
            {"type": "apiKey", "in": "header", "name": "Authorization",
             "description": "`Token <key>` (auth mode token; `manage.py create_api_token NAME`)"},
            {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "Django session login"},
        ]

    def get_security_requirement(self, auto_schema):
        return [{"tokenAuth": []}, {"cookieAuth": []}]
