"""What the API and the dashboard share, so neither imports the other: query and body input checks, page sizes,
the JSON error body, and the health probes (GET /health and the system page)."""
