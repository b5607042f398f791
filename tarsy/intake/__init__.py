"""Webhook intake: Alertmanager, Grafana and PagerDuty payloads read into alerts TARSy investigates.

Plain parsing and mapping, no database: `payloads` validates each vendor's documented format and yields
`Firing` and `Resolved` items; `mapping` applies the per-source rules of `tarsy.yaml` (`intake:`);
`signatures` checks shared secrets and PagerDuty's HMAC. `tarsy.services.intake.deliveries` turns the items into
sessions.
"""
