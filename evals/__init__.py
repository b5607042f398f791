"""Scenario evals: recorded incidents, a fixture MCP server, a runner that scores real sessions, replay and capture.

Modules without Django (scenario, fixtures, fixture_server, runconfig) are what the fixture server process
imports; the rest read and write sessions through the tarsy app.
"""
